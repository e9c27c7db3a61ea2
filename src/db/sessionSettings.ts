// The session settings every Tessera connection runs with, and where they come from.
//
// Straight to PostgreSQL, they travel in the connection's start-up packet (`options`), in force from
// the first statement and for this process's connections only. Behind PgBouncer in transaction mode
// that is impossible — PgBouncer refuses the start-up parameters it does not know (08P01
// "unsupported startup parameter: statement_timeout") and a server connection serves many clients —
// so they are role settings instead (`ALTER ROLE … IN DATABASE … SET`), of DATABASE_URL's role in the
// database DATABASE_DIRECT_URL is in (its current_database(): PgBouncer's name for it may be another),
// written at start on that direct connection and read back through the pooler. Every server
// connection PgBouncer opens from then on gets them, and nothing a transaction does outlives it; one
// it opened before keeps the values it started with until it is replaced (RECONNECT on PgBouncer's
// admin console, a restart of PgBouncer, or server_lifetime). Tessera serves only when the
// connection it checks at start runs with every one of them: otherwise it refuses, in one line that
// says why (`refusal` below) — main.ts.
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
//     5 ms for 32 claims into 1.3–2.1 s. An OLTP statement never repays compiling it.
import type { Pool, PoolClient } from 'pg';
import type { Config } from '../config';
import type { Dialect } from './dialect';
import { connectClient, parseHosts } from './hosts';

type Timeouts = Pick<Config['database'], 'statementTimeoutMs' | 'lockTimeoutMs' | 'idleInTransactionTimeoutMs'> & { dialect?: Pick<Dialect, 'planCacheMode'> };

/** Each setting with the value Tessera wants, as PostgreSQL's SHOW prints it after a SET in these units. */
export function sessionSettings(o: Timeouts): Array<{ name: string; value: string }> {
  return [
    { name: 'statement_timeout', value: `${o.statementTimeoutMs}ms` },
    { name: 'lock_timeout', value: `${o.lockTimeoutMs}ms` },
    { name: 'idle_in_transaction_session_timeout', value: `${o.idleInTransactionTimeoutMs}ms` },
    { name: 'default_transaction_isolation', value: 'read committed' },
    { name: 'plan_cache_mode', value: o.dialect?.planCacheMode ?? 'force_generic_plan' },
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

/** Where the role settings were written: the role, the database, and when (the server's clock, after the last). */
export interface RoleSettings {
  role: string;
  database: string;
  writtenAt: Date;
}

/** The role settings could not be written (a role that may not set another's, say); `at`: when that was tried. */
export class RoleSettingsWriteError extends Error {
  override name = 'RoleSettingsWriteError';
  constructor(
    readonly role: string,
    readonly database: string,
    readonly at: Date,
    options: { cause: unknown },
  ) {
    super(`could not write the session settings as role settings of "${role}" in database "${database}": ${(options.cause as Error)?.message ?? String(options.cause)}`, options);
  }
}

/**
 * Makes the settings role settings of DATABASE_URL's user in the database of the direct connection
 * (`current_database()`, not DATABASE_URL's name, which is PgBouncer's and may be an alias): what a
 * connection through a transaction pooler runs with. A role may set its own (`ALTER ROLE
 * CURRENT_USER`); setting another's needs CREATEROLE or a superuser — a RoleSettingsWriteError
 * otherwise. Existing server connections keep the values they started with until the pooler
 * replaces them.
 */
export async function applySessionSettings(directUrl: string, appUrl: string, o: Timeouts): Promise<RoleSettings> {
  const app = new URL(appUrl.split(',')[0]!);
  const role = decodeURIComponent(app.username) || 'postgres';
  const client = await connectClient(directUrl);
  try {
    const { rows } = await client.query<{ database: string; at: Date }>('SELECT current_database() AS database, clock_timestamp() AS at');
    const { database, at } = rows[0]!;
    try {
      for (const s of sessionSettings(o)) {
        await client.query(`ALTER ROLE ${ident(role)} IN DATABASE ${ident(database)} SET ${s.name} = '${s.value}'`);
      }
    } catch (error) {
      throw new RoleSettingsWriteError(role, database, at, { cause: error });
    }
    const written = await client.query<{ at: Date }>('SELECT clock_timestamp() AS at');
    return { role, database, writtenAt: written.rows[0]!.at };
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface SettingsCheck {
  /** name → value as a pooled connection reports it. */
  inForce: Record<string, string>;
  /** Settings whose value is not the one wanted: name, wanted, found. */
  wrong: Array<{ name: string; wanted: string; found: string }>;
  /** The server connection's role (session_user: the one role settings are looked up for) and database. */
  role: string;
  database: string;
  /** When that server connection started: it took the role settings of that moment. */
  backendStart: Date;
}

/**
 * Reads what a connection of the pool actually runs with, for the start-up line and the decision
 * to serve. One statement: behind a transaction pooler two could run on different server connections.
 */
export async function checkSessionSettings(pool: Pick<Pool | PoolClient, 'query'>, o: Timeouts): Promise<SettingsCheck> {
  const wanted = sessionSettings(o);
  // current_setting() prints a timeout in its largest exact unit (5000ms → 5s): compare in ms.
  const { rows } = await pool.query<{ name: string; setting: string; unit: string | null; role: string; database: string; backend_start: Date }>(
    `SELECT name, setting, unit, session_user AS role, current_database() AS database,
            (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()) AS backend_start
       FROM pg_settings WHERE name = ANY($1::text[])`,
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
  return { inForce, wrong, role: rows[0]?.role ?? '', database: rows[0]?.database ?? '', backendStart: rows[0]?.backend_start ?? new Date(0) };
}

/** Tessera will not serve: a setting the claim relies on is not in force, and why, in one line. */
export class SessionSettingsError extends Error {
  override name = 'SessionSettingsError';
}

/**
 * Why Tessera must not serve with what `check` found, and what to do — or null when every setting
 * is in force. `written` is what this process wrote (or why it could not) behind PgBouncer,
 * undefined when it wrote nothing (straight to PostgreSQL, or a worker of WEB_CONCURRENCY > 1,
 * whose primary wrote them); `url` is DATABASE_URL, whose database name is PgBouncer's entry.
 */
export function refusal(
  check: SettingsCheck,
  pooler: 'pgbouncer' | 'none',
  url: string,
  written?: RoleSettings | RoleSettingsWriteError,
): SessionSettingsError | null {
  if (check.wrong.length === 0) return null;
  const pgbouncer = new URL(parseHosts(url).urls[0]!);
  const alias = decodeURIComponent(pgbouncer.pathname.slice(1));
  const found = check.wrong.map((w) => `${w.name} ${w.found} (not ${w.wanted})`).join(', ');
  const where = `database "${check.database}", role "${check.role}"`;
  const docs = '(docs/SCALING.md, "Deployment")';
  if (pooler === 'none') {
    return new SessionSettingsError(
      `Tessera's connections run with ${found} (${where}), though each asks for them as it starts: something on the server overrides them; Tessera does not serve without them ${docs}.`,
    );
  }
  const start = `Behind PgBouncer, Tessera's connections run with ${found} (${where}): `;
  const adminConsole = `psql -h ${pgbouncer.hostname || 'localhost'} -p ${pgbouncer.port || 5432} -U <one of its admin_users> pgbouncer -c 'RECONNECT ${alias}'`;
  const reconnect = `run RECONNECT ${alias} on PgBouncer's admin console (${adminConsole}), or restart PgBouncer, then start Tessera again ${docs}.`;
  let why: string;
  if (written instanceof RoleSettingsWriteError) {
    why =
      `Tessera could not write them as role settings on DATABASE_DIRECT_URL (${(written.cause as Error)?.message ?? String(written.cause)}). ` +
      `As "${written.role}" itself, a role with CREATEROLE or a superuser, run the ALTER ROLE "${written.role}" IN DATABASE "${written.database}" SET … lines ${docs}, then start Tessera again.` +
      // Written by hand already? Then the server connection checked may simply be older than them.
      (check.backendStart < written.at ? ` If they are written already, PgBouncer's server connection is older than them: ${reconnect}` : '');
  } else if (written && written.database !== check.database) {
    why = `PgBouncer's entry "${alias}" leads to database "${check.database}", but DATABASE_DIRECT_URL to "${written.database}", where the migrations ran and the role settings were written: point both at the same database ${docs}.`;
  } else if (written && written.role !== check.role) {
    why = `PgBouncer logs in to PostgreSQL as "${check.role}", but the role settings were written for DATABASE_URL's user "${written.role}": give DATABASE_URL the role PgBouncer logs in as (its entry's user=), or set them for "${check.role}" yourself ${docs}.`;
  } else if (written && check.backendStart < written.writtenAt) {
    why = `the role settings are written, but PgBouncer's server connection was opened before and keeps the values it started with: ${reconnect}`;
  } else if (written) {
    why = `the role settings are written and this server connection was opened after them, yet runs without them: something sets them again after login (PgBouncer's connect_query?) ${docs}.`;
  } else {
    why = `set them as role settings of "${check.role}" in database "${check.database}" ${docs}; server connections opened before keep their old values: ${reconnect}`;
  }
  return new SessionSettingsError(start + why);
}
