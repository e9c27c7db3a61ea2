// A real Tessera server on a real database of its own, for one test file: HTTP on a random port,
// a pg pool for assertions made directly in SQL, and small helpers for the common set-up steps.
import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import { Pool } from 'pg';
import { verifyCampaign } from '../../src/db/verifyCampaign';
import type { Config } from '../../src/config';
import { createDatabase, type Database } from '../../src/db/client';
import { applySessionSettings } from '../../src/db/sessionSettings';
import { createLogger, type Logger } from '../../src/logger';
import { createServer, type TesseraServer } from '../../src/server';
import { sweepOnce } from '../../src/sweeper';
import { claimTicket, holdTicket, type AllocationAnswer, type AllocationInput } from './allocations';
import { dialectOf } from '../../src/db/dialect';
import { citusNodes, cloneCitusDatabase, dropCitusDatabase } from './citus';
import { databaseUrl, RUN_ENV, SERVER_ENV, TEMPLATE_ENV, withClient } from './env';
import { ADMIN_KEY, graphqlData, postGraphQL, type GraphQLResponse } from './graphql';
import { POOLER_ENV } from './pgbouncer';
import { COUNTER_TOTALS_SQL, TICKET_COUNTS_SQL, type Queryable, type TicketCounts } from './sql';
import { sleep } from './time';

export { ADMIN_KEY, type GraphQLResponse } from './graphql';
export { allocated, CLAIM, HOLD, type Allocated, type AllocationAnswer, type ClaimPayload, type HoldPayload } from './allocations';

/** The key test servers seal webhook secrets with (WEBHOOK_SECRET_KEY's place). */
export const TEST_WEBHOOK_KEY = Buffer.alloc(32, 7);

export interface TestServer {
  readonly url: string;
  readonly databaseUrl: string;
  readonly db: Database;
  /** Direct SQL for assertions; never used by the code under test. */
  readonly sql: Pool;
  gql<T = Record<string, any>>(key: string | null, query: string, variables?: Record<string, unknown>): Promise<GraphQLResponse<T>>;
  createPartner(name?: string): Promise<{ id: string; apiKey: string }>;
  createCampaign(input?: Record<string, unknown>): Promise<string>;
  loadTickets(campaignId: string, count: number, prefix?: string): Promise<string[]>;
  openCampaign(campaignId: string): Promise<void>;
  /** A campaign, OPEN, with `count` tickets. */
  openCampaignWith(count: number, input?: Record<string, unknown>): Promise<string>;
  /** claimTicket's typed result (holder "h" unless given); throws on a GraphQL error. */
  claim(key: string, input: AllocationInput): Promise<AllocationAnswer>;
  /** holdTicket's typed result (holder "h", ttlSeconds 600 unless given); throws on a GraphQL error. */
  hold(key: string, input: AllocationInput): Promise<AllocationAnswer>;
  /**
   * One sweep of the hold sweeper, now, on this server's database (src/sweeper.ts sweepOnce):
   * what a test waits for instead of the timer. Start with `holdSweepIntervalMs: 0` for a server
   * whose only sweeps are these. Returns how many holds it expired.
   */
  sweep(): Promise<number>;
  stop(): Promise<void>;
}

/** A database of its own for one test: a clone of the migrated template, or empty (`migrated: false`). */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = process.env[SERVER_ENV];
  const template = process.env[TEMPLATE_ENV];
  const run = process.env[RUN_ENV];
  if (!serverUrl || !template || !run) throw new Error('test/helpers/globalSetup.ts did not run');
  const name = `tessera_test_${run}_${randomBytes(4).toString('hex')}`;
  const admin = databaseUrl(serverUrl, 'postgres');
  const citus = citusNodes();
  if (citus) {
    // npm run test:citus: the database on every node of the cluster (test/helpers/citus.ts).
    if (options.migrated === false) throw new Error('test:citus makes migrated databases only');
    await cloneCitusDatabase(citus, template, name);
    return { url: databaseUrl(serverUrl, name), drop: () => dropCitusDatabase(citus, name) };
  }
  for (let attempt = 1; ; attempt += 1) {
    try {
      await withClient(admin, (c) => c.query(`CREATE DATABASE "${name}" TEMPLATE "${options.migrated === false ? 'template0' : template}"`));
      break;
    } catch (error) {
      // Two workers cloning the template at the same instant: "source database is being accessed".
      if (attempt >= 20) throw error;
      await sleep(100 * attempt);
    }
  }
  return {
    url: databaseUrl(serverUrl, name),
    drop: () => withClient(admin, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}

export const TEST_DATABASE_CONFIG: Config['database'] = {
  poolSize: 10,
  poolTimeoutMs: 5_000,
  poolMaxWaiting: 1_000,
  statementTimeoutMs: 10_000,
  lockTimeoutMs: 5_000,
  idleInTransactionTimeoutMs: 10_000,
  pooler: 'none',
};

export async function startTestServer(
  options: {
    database?: Partial<Config['database']>;
    logger?: Logger;
    config?: Partial<Pick<Config, 'env' | 'apiKeyCacheTtlMs' | 'holdSweepIntervalMs' | 'refusalFlushMs' | 'readReplicas' | 'claimBatchMax' | 'rateLimit' | 'graphql' | 'corsOrigins' | 'metricsToken' | 'webhooks' | 'trustProxy' | 'websocket' | 'redisKeyPrefix'>>;
    redis?: Redis;
    /** Use this database instead of a fresh one (several servers on one database). */
    databaseUrl?: string;
    /**
     * On Citus (npm run test:citus), stop() verifies every campaign of the database first
     * (verifyCampaign: 0 violations, 0 drifts) and fails with what it found; false for a file that
     * corrupts figures on purpose.
     */
    verifyAtStop?: boolean;
  } = {},
): Promise<TestServer> {
  const database = options.databaseUrl ? { url: options.databaseUrl, drop: async () => undefined } : await createTestDatabase();
  // npm run test:pgbouncer (globalSetupPgbouncer.ts): the server reaches its database through
  // PgBouncer, the session settings made the role's settings in that database first; `sql` stays direct.
  const poolerUrl = process.env[POOLER_ENV];
  const dbOptions: Config['database'] = { ...TEST_DATABASE_CONFIG, ...options.database, ...(poolerUrl ? { pooler: 'pgbouncer' as const } : {}) };
  const appUrl = poolerUrl ? databaseUrl(poolerUrl, decodeURIComponent(new URL(database.url).pathname.slice(1))) : database.url;
  if (poolerUrl) await applySessionSettings(database.url, appUrl, dbOptions);
  const db = createDatabase({ ...dbOptions, url: appUrl, dialect: dialectOf(citusNodes() !== null ? 'citus' : 'postgresql', dbOptions.pooler ?? 'none') });
  const logger = options.logger ?? createLogger({ env: 'test', level: process.env.TEST_LOG_LEVEL });
  const server: TesseraServer = await createServer({
    // Group claims on, as in production, unless TESSERA_TEST_CLAIM_BATCH_MAX says otherwise: every
    // race test then exercises the group statement (and its fallbacks) as well as the single one.
    config: {
      env: 'test',
      adminApiKey: ADMIN_KEY,
      shutdownGraceMs: 5_000,
      claimBatchMax: Number(process.env.TESSERA_TEST_CLAIM_BATCH_MAX ?? 32),
      webhooks: { secretKey: TEST_WEBHOOK_KEY, allowPrivateNetworks: false, production: false },
      ...options.config,
    },
    db,
    logger,
    redis: options.redis,
  });
  const { port } = await server.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${port}/graphql`;
  const sql = new Pool({ connectionString: database.url, max: 4 });
  sql.on('error', () => undefined);

  const gql: TestServer['gql'] = (key, query, variables) => postGraphQL(url, key, query, variables);
  const must = <T>(key: string, query: string, variables?: Record<string, unknown>): Promise<T> => graphqlData<T>(url, key, query, variables);

  const helpers: TestServer = {
    url,
    databaseUrl: database.url,
    db,
    sql,
    gql,
    async createPartner(name = 'Partner') {
      const data = await must<{ createPartner: { partner: { id: string }; apiKey: string } }>(
        ADMIN_KEY,
        'mutation($name: String!) { createPartner(input: { name: $name }) { partner { id } apiKey } }',
        { name },
      );
      return { id: data.createPartner.partner.id, apiKey: data.createPartner.apiKey };
    },
    async createCampaign(input = {}) {
      const data = await must<{ createCampaign: { campaign: { id: string } } }>(
        ADMIN_KEY,
        'mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { campaign { id } } }',
        { input: { name: 'Campaign', ...input } },
      );
      return data.createCampaign.campaign.id;
    },
    async loadTickets(campaignId, count, prefix = 'T') {
      const codes = Array.from({ length: count }, (_, i) => `${prefix}-${String(i + 1).padStart(6, '0')}`);
      await must(ADMIN_KEY, 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded } }', {
        id: campaignId,
        codes,
      });
      return codes;
    },
    async openCampaign(campaignId) {
      await must(ADMIN_KEY, 'mutation($id: ID!) { openCampaign(id: $id) { campaign { id } } }', { id: campaignId });
    },
    async openCampaignWith(count, input = {}) {
      const id = await helpers.createCampaign(input);
      if (count > 0) await helpers.loadTickets(id, count);
      await helpers.openCampaign(id);
      return id;
    },
    claim: (key, input) => claimTicket(gql, key, input),
    hold: (key, input) => holdTicket(gql, key, input),
    sweep: () => sweepOnce(db),
    async stop() {
      await server.stop();
      const drifted: string[] = [];
      if (citusNodes() && options.verifyAtStop !== false && !options.databaseUrl) {
        const { rows } = await sql.query<{ id: string }>('SELECT id FROM campaigns ORDER BY created_at');
        for (const { id } of rows) {
          for (const d of await verifyCampaign(sql, id)) drifted.push(`${id}: ${d.check} ${d.subject ?? ''} expected ${d.expected}, found ${d.found}`);
        }
      }
      await db.close();
      await sql.end();
      await database.drop();
      if (drifted.length > 0) throw new Error(`verifyCampaign at the end, on Citus: ${drifted.length} drift(s) or violation(s):\n${drifted.join('\n')}`);
    },
  };
  return helpers;
}

/**
 * Invariants checked in the database itself, after any storm: read in one statement, so in one
 * snapshot — a hold the sweeper ends meanwhile is seen before or after, never half.
 */
export async function assertPoolInvariants(sql: Queryable, campaignId: string): Promise<TicketCounts> {
  const { rows } = await sql.query(
    `WITH ticket_counts AS (${TICKET_COUNTS_SQL}),
          counter_totals AS (${COUNTER_TOTALS_SQL}),
          live_allocations AS (
            SELECT count(*)::int AS live, count(DISTINCT ticket_id)::int AS distinct_tickets
              FROM allocations WHERE campaign_id = $1 AND status IN ('ACTIVE', 'HELD')),
          mismatched AS (
            SELECT count(*)::int AS n FROM tickets t
              LEFT JOIN allocations a ON a.campaign_id = t.campaign_id AND a.ticket_id = t.id AND a.status IN ('ACTIVE', 'HELD')
             WHERE t.campaign_id = $1
               AND ((t.status IN ('AVAILABLE', 'VOID', 'ALLOTTED', 'RETURNED')) <> (a.id IS NULL)
                 OR (t.status = 'ALLOCATED' AND a.status <> 'ACTIVE')
                 OR (t.status = 'HELD' AND a.status <> 'HELD')))
     SELECT row_to_json(ticket_counts) AS stats, row_to_json(counter_totals) AS counters, live_allocations.*, mismatched.n AS mismatched
       FROM ticket_counts, counter_totals, live_allocations, mismatched`,
    [campaignId],
  );
  const { stats, counters, live, distinct_tickets, mismatched } = rows[0] as {
    stats: TicketCounts;
    counters: Omit<TicketCounts, 'available' | 'allotted' | 'returned'>;
    live: number;
    distinct_tickets: number;
    mismatched: number;
  };
  // No ticket twice; every ALLOCATED ticket has exactly one live allocation and vice versa.
  expect(live).toBe(distinct_tickets);
  expect(live).toBe(stats.allocated + stats.held);
  expect(mismatched).toBe(0);
  expect(stats.allocated + stats.held + stats.returned + stats.available + stats.void + stats.allotted).toBe(stats.total);
  // The stats counters (kept by triggers) agree with the tickets themselves.
  expect(counters).toEqual({ total: stats.total, allocated: stats.allocated, held: stats.held, void: stats.void });
  // And so does every other figure verifyCampaign checks (per partner, per minute, quotas, allotments).
  expect(await verifyCampaign(sql, campaignId)).toEqual([]);
  return stats;
}
