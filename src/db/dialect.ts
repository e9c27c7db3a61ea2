// What differs between the databases Tessera runs on, decided once at start-up (main.ts) and
// handed down with the Database (Database.dialect): nothing asks the database what it is again.
//
//   postgresql  one PostgreSQL server (with or without read replicas)
//   citus       a Citus coordinator: the campaigns' tables distributed by campaign across workers
//
// and, for either, whether DATABASE_URL is a transaction pooler (PgBouncer), which takes no
// start-up parameters and keeps no prepared statements across transactions.
//
// Everything a deployment changes follows from those two answers, here, as properties with one
// meaning each; the code that needs one reads it. test/dialects.test.ts holds every dialect to the
// same behaviour.
import type { Pooler } from './pooler';

export type DatabaseKind = 'postgresql' | 'citus';

export interface Dialect {
  readonly kind: DatabaseKind;
  readonly pooler: Pooler;
  /**
   * Claims that wait together go as one call: of any campaigns (one server holds them all), or of
   * one campaign each (a call must stay on the node holding its campaign).
   */
  readonly claimGroups: 'any' | 'campaign';
  /**
   * Where a keyed claim's idempotency key is looked up in the partner's other campaigns: in the
   * claim's gate (one server sees every campaign), or first, on the coordinator, in the claim's
   * transaction (the gate runs on the campaign's node and sees only its campaign).
   */
  readonly keyCheck: 'in-gate' | 'coordinator-first';
  /**
   * The sessions' plan_cache_mode: generic plans, made once per session, on one server; Citus's own
   * choice on a coordinator, whose distributed planner needs the parameters' values to route.
   */
  readonly planCacheMode: 'force_generic_plan' | 'auto';
  /**
   * How the webhook outbox is drained and its deliveries leased: by one statement each, or per
   * campaign (Citus routes a statement to one shard; a statement over all of them is refused).
   */
  readonly outbox: 'one-statement' | 'per-campaign';
  /** Named (server-side) prepared statements per connection: not behind a transaction pooler. */
  readonly namedStatements: boolean;
}

/** The dialect of a database of `kind`, reached through `pooler`. */
export function dialectOf(kind: DatabaseKind, pooler: Pooler = 'none'): Dialect {
  const citus = kind === 'citus';
  return {
    kind,
    pooler,
    claimGroups: citus ? 'campaign' : 'any',
    keyCheck: citus ? 'coordinator-first' : 'in-gate',
    planCacheMode: citus ? 'auto' : 'force_generic_plan',
    outbox: citus ? 'per-campaign' : 'one-statement',
    namedStatements: pooler !== 'pgbouncer',
  };
}

/** One line for the start-up log. */
export function describeDialect(d: Dialect): string {
  const database = d.kind === 'citus' ? 'Citus coordinator (tables distributed by campaign; claims grouped per campaign)' : 'PostgreSQL';
  return d.pooler === 'pgbouncer' ? `${database}, through PgBouncer in transaction mode` : database;
}
