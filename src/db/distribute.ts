// Tessera on Citus (docs/SCALING.md, "Citus"): where the database is a Citus coordinator — the
// `citus` extension is installed — the migrator places every table after it migrates, so an
// operator runs nothing by hand and a migration that adds a table gets it placed at the next start.
//
// Campaign-scoped tables are distributed by campaign_id and colocated with tickets: every statement
// that names one campaign (a claim, a hold, a confirmation, the draw, …) is routed to the one node
// holding that campaign's shards. Small tables read on every claim — campaigns, partners, keys —
// are reference tables (a copy on every node, so a claim joins them where it runs). The migrator's
// own bookkeeping stays local on the coordinator.
//
// Triggers on distributed tables run on the shards (citus.enable_unsafe_triggers, set for the
// migrator's session): each trigger of Tessera's touches only rows of the campaign that fired it,
// which are colocated on that node.
import type { Client } from 'pg';
import { connectClient } from './hosts';

export type Placement = { readonly kind: 'reference' } | { readonly kind: 'distributed' };

/** Every table of the schema and where it lives on Citus (test/citus.test.ts checks none is missing). */
export const PLACEMENT: ReadonlyMap<string, Placement> = new Map<string, Placement>([
  ['partners', { kind: 'reference' }],
  ['campaigns', { kind: 'reference' }],
  ['audit_log', { kind: 'reference' }],
  ['operator_keys', { kind: 'reference' }],
  ['partner_test_keys', { kind: 'reference' }],
  // Webhooks: endpoints are few and read by every drain; deliveries are written off the claim path.
  ['webhook_endpoints', { kind: 'reference' }],
  ['webhook_deliveries', { kind: 'reference' }],
  // Distributed by campaign_id, colocated with tickets (the first one is the colocation group).
  ['tickets', { kind: 'distributed' }],
  ['allocations', { kind: 'distributed' }],
  ['partner_quotas', { kind: 'distributed' }],
  ['partner_quota_credits', { kind: 'distributed' }],
  ['allotments', { kind: 'distributed' }],
  ['waitlist_entries', { kind: 'distributed' }],
  ['campaign_counters', { kind: 'distributed' }],
  ['partner_counters', { kind: 'distributed' }],
  ['minute_counters', { kind: 'distributed' }],
  ['refusal_counters', { kind: 'distributed' }],
  // The outbox: a claim appends its event on its own shard.
  ['webhook_events', { kind: 'distributed' }],
  ['ballots', { kind: 'distributed' }],
  ['ballot_entries', { kind: 'distributed' }],
  ['ballot_ranks', { kind: 'distributed' }],
]);

export const DISTRIBUTION_COLUMN = 'campaign_id';
/** The migrator's own tables: local on the coordinator, where it runs. */
export const BOOKKEEPING_TABLES = ['_prisma_migrations', '_tessera_functions'];

/** Whether the database at `url` is a Citus coordinator (the extension installed). */
export async function detectCitus(url: string): Promise<boolean> {
  const client = await connectClient(url);
  try {
    return await isCitus(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function isCitus(client: Client): Promise<boolean> {
  const { rows } = await client.query("SELECT 1 FROM pg_extension WHERE extname = 'citus'");
  return rows.length > 0;
}

/**
 * Lets the migrator's session create triggers on distributed tables (function files drop and create
 * theirs on every change). Call before migrating on Citus.
 */
export async function prepareCitusSession(client: Client): Promise<void> {
  await client.query('SET citus.enable_unsafe_triggers = on');
}

/**
 * Places every table not placed yet; returns what it placed, as `citus: <table> (<kind>)`. Foreign
 * keys between tables to be distributed are dropped and added again around the calls (Citus
 * distributes a table only when every table referencing it is distributed with it), all in one
 * transaction: a failure places nothing. Runs before the function files are applied: placing a
 * table drops the functions that take or return its row type (the migrator applies them again).
 */
export async function distributeTables(client: Client): Promise<string[]> {
  const { rows: tables } = await client.query<{ name: string; placed: boolean }>(
    `SELECT c.relname AS name, EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid) AS placed
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname <> ALL ($1)`,
    [BOOKKEEPING_TABLES],
  );
  const unknown = tables.filter((t) => !PLACEMENT.has(t.name)).map((t) => t.name);
  if (unknown.length > 0) {
    throw new Error(`No Citus placement for ${unknown.join(', ')}: add each table to PLACEMENT in src/db/distribute.ts.`);
  }
  const pending = new Set(tables.filter((t) => !t.placed).map((t) => t.name));
  const done: string[] = [];
  await client.query('BEGIN');
  try {
    await client.query("SET LOCAL citus.multi_shard_modify_mode = 'sequential'");
    // Foreign keys from a table still to be distributed to one still to be distributed.
    const { rows: keys } = await client.query<{ name: string; from_table: string; definition: string }>(
      `SELECT con.conname AS name, f.relname AS from_table, pg_get_constraintdef(con.oid) AS definition
         FROM pg_constraint con JOIN pg_class f ON f.oid = con.conrelid JOIN pg_class t ON t.oid = con.confrelid
        WHERE con.contype = 'f' AND f.relname = ANY($1) AND t.relname = ANY($1) AND f.relname <> t.relname`,
      [[...pending].filter((name) => PLACEMENT.get(name)!.kind === 'distributed')],
    );
    for (const key of keys) await client.query(`ALTER TABLE "${key.from_table}" DROP CONSTRAINT "${key.name}"`);
    for (const [name, placement] of PLACEMENT) {
      if (!pending.has(name)) continue;
      if (placement.kind === 'reference') {
        await client.query('SELECT create_reference_table($1)', [name]);
      } else {
        await client.query('SELECT create_distributed_table($1, $2, colocate_with => $3)', [
          name,
          DISTRIBUTION_COLUMN,
          name === 'tickets' ? 'default' : 'tickets',
        ]);
      }
      done.push(`citus: ${name} (${placement.kind})`);
    }
    for (const key of keys) await client.query(`ALTER TABLE "${key.from_table}" ADD CONSTRAINT "${key.name}" ${key.definition}`);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw new Error(`Placing the tables on Citus failed: ${(error as Error).message}`, { cause: error });
  }
  return done;
}

/**
 * The functions a call of which runs whole on the node holding its campaign: Citus delegates
 * `SELECT f(campaign, …)` there (distribution argument: the campaign; colocated with tickets) —
 * inside a transaction too (force_delegation), which requires every statement of the function to
 * name that campaign. tessera_claim_one is the first look and tessera_claim_tickets the claim in
 * general (a first look so routed: 3.8 ms a claim through the coordinator, one pgbench client,
 * against 30–50 ms for one statement of CTEs, which Citus cuts into steps);
 * tessera_lock_campaign_gate takes the gate's exclusive side where the first look takes its shared
 * side (campaignGate.ts).
 */
export const DELEGATED: ReadonlyMap<string, string> = new Map([
  ['tessera_claim_one', 'p_campaign_id'],
  ['tessera_claim_campaign_group', 'p_campaign_id'],
  ['tessera_claim_tickets', 'p_campaign_id'],
  ['tessera_lock_campaign_gate', 'p_campaign_id'],
]);

/**
 * Makes every function of Tessera's known on every node (statements the workers execute call some
 * of them), and the DELEGATED ones delegated; returns them as `citus: function <signature>`. Once
 * propagated, a later CREATE OR REPLACE follows a function there.
 */
export async function distributeFunctions(client: Client): Promise<string[]> {
  const done: string[] = [];
  const { rows: functions } = await client.query<{ signature: string; name: string; delegated: boolean }>(
    `SELECT p.oid::regprocedure::text AS signature, p.proname AS name,
            (o.objid IS NOT NULL AND o.distribution_argument_index IS NOT NULL) AS delegated
       FROM pg_proc p
       LEFT JOIN pg_dist_object o ON o.classid = 'pg_proc'::regclass AND o.objid = p.oid
      WHERE p.pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) AND p.proname LIKE 'tessera\\_%'
        AND (o.objid IS NULL OR (p.proname = ANY($1) AND o.distribution_argument_index IS NULL))`,
    [[...DELEGATED.keys()]],
  );
  for (const f of functions) {
    const argument = DELEGATED.get(f.name);
    if (argument === undefined) {
      await client.query('SELECT create_distributed_function($1)', [f.signature]);
      done.push(`citus: function ${f.signature}`);
    } else {
      await client.query(
        "SELECT create_distributed_function($1, distribution_arg_name => $2, colocate_with => 'tickets', force_delegation => true)",
        [f.signature, argument],
      );
      done.push(`citus: function ${f.signature}, delegated by ${argument}`);
    }
  }
  return done;
}
