// The session settings every Tessera connection runs with, and where they come from.
//
// Straight to PostgreSQL, they travel in the connection's start-up packet (`options`), in force from
// the first statement and for this process's connections only. Behind PgBouncer in transaction mode
// that is impossible — PgBouncer refuses the start-up parameters it does not know (08P01
// "unsupported startup parameter: statement_timeout") and a server connection serves many clients —
// so they are role settings for this database instead (`ALTER ROLE … IN DATABASE … SET`), applied at
// start on the direct connection (DATABASE_DIRECT_URL) and read back through the pooler: every
// server connection PgBouncer opens gets them, and nothing a transaction does outlives it.
//
// Why each one:
//   - statement_timeout, lock_timeout, idle_in_transaction_session_timeout: no claim can hold a
//     ticket row or a gate lock indefinitely;
//   - default_transaction_isolation: the claim's correctness argument is written for READ COMMITTED
//     (re-checked predicates, fresh snapshots in the gate function); pinned rather than inherited;
//   - plan_cache_mode = force_generic_plan: left to itself PostgreSQL re-plans a prepared claim at
//     every execution (its custom plans look cheaper than the generic one), and planning that
//     statement took 1.1 ms of its 2.4 ms here; with the generic plan a claim took 1.0 ms. Safe
//     because every statement's plan is decided by its shape, not by one campaign's statistics
//     (test/plan.test.ts checks the generic plans);
//     On Citus: auto (PostgreSQL's default), below;
//   - jit = off: PostgreSQL compiles a plan whose estimated cost passes jit_above_cost with LLVM at
//     every execution, and the group claim's plan does (its LIMITs are parameters): JIT turned its
//     5 ms for 32 claims into 1.3–2.1 s (2026-12-01). An OLTP statement never repays compiling it.
import type { Pool } from 'pg';
import type { Config } from '../config';
import { connectClient } from './hosts';

type Timeouts = Pick<Config['database'], 'statementTimeoutMs' | 'lockTimeoutMs' | 'idleInTransactionTimeoutMs'> & { citus?: boolean };

/** Each setting with the value Tessera wants, as PostgreSQL's SHOW prints it after a SET in these units. */
export function sessionSettings(o: Timeouts): Array<{ name: string; value: string }> {
  return [
    { name: 'statement_timeout', value: `${o.statementTimeoutMs}ms` },
    { name: 'lock_timeout', value: `${o.lockTimeoutMs}ms` },
    { name: 'idle_in_transaction_session_timeout', value: `${o.idleInTransactionTimeoutMs}ms` },
    { name: 'default_transaction_isolation', value: 'read committed' },
    // On Citus a generic plan cannot be routed (the shard is picked from the campaign id's value),
    // and Citus makes its custom plans the cheaper choice by itself: PostgreSQL's default there.
    { name: 'plan_cache_mode', value: o.citus ? 'auto' : 'force_generic_plan' },
    { name: 'jit', value: 'off' },
  ];
}

/** The start-up packet's `options` for a direct connection: `-c name=value` each. */
export function startupOptions(o: Timeouts): string {
  return sessionSettings(o)
    .map((s) => `-c ${s.name}=${s.value.replace(/ /g, '\\ ')}`)
    .join(' ');
}

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Makes the settings role settings of DATABASE_URL's user in DATABASE_URL's database, on a direct
 * connection: what a connection through a transaction pooler runs with. A role may set its own
 * (`ALTER ROLE CURRENT_USER`); setting another's needs CREATEROLE or a superuser. Existing server
 * connections keep the values they started with until the pooler replaces them.
 */
export async function applySessionSettings(directUrl: string, appUrl: string, o: Timeouts): Promise<void> {
  const app = new URL(appUrl.split(',')[0]!);
  const user = decodeURIComponent(app.username) || 'postgres';
  const database = decodeURIComponent(app.pathname.slice(1)) || user;
  const client = await connectClient(directUrl);
  try {
    for (const s of sessionSettings(o)) {
      await client.query(`ALTER ROLE ${ident(user)} IN DATABASE ${ident(database)} SET ${s.name} = '${s.value}'`);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface SettingsCheck {
  /** name → value as a pooled connection reports it. */
  inForce: Record<string, string>;
  /** Settings whose value is not the one wanted: name, wanted, found. */
  wrong: Array<{ name: string; wanted: string; found: string }>;
}

/** Reads what a connection of the pool actually runs with, for the start-up line. */
export async function checkSessionSettings(pool: Pool, o: Timeouts): Promise<SettingsCheck> {
  const wanted = sessionSettings(o);
  // current_setting() prints a timeout in its largest exact unit (5000ms → 5s): compare in ms.
  const { rows } = await pool.query<{ name: string; setting: string; unit: string | null }>(
    `SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1::text[])`,
    [wanted.map((s) => s.name)],
  );
  const found = new Map(rows.map((r) => [r.name, r.unit === 'ms' ? `${r.setting}ms` : r.setting]));
  const inForce: Record<string, string> = {};
  const wrong: SettingsCheck['wrong'] = [];
  for (const s of wanted) {
    const value = found.get(s.name) ?? '(unknown)';
    inForce[s.name] = value;
    if (value !== s.value) wrong.push({ name: s.name, wanted: s.value, found: value });
  }
  return { inForce, wrong };
}
