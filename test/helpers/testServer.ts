// A real Tessera server on a real database of its own, for one test file: HTTP on a random port,
// a pg pool for assertions made directly in SQL, and small helpers for the common set-up steps.
import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import { Pool } from 'pg';
import type { Config } from '../../src/config';
import { createDatabase, type Database } from '../../src/db/client';
import { createLogger, type Logger } from '../../src/logger';
import { createServer, type TesseraServer } from '../../src/server';
import { databaseUrl, RUN_ENV, SERVER_ENV, TEMPLATE_ENV, withClient } from './env';
import { sleep } from './time';

export const ADMIN_KEY = 'test-admin-key-0123456789';

export interface GraphQLResponse<T = Record<string, any>> {
  status: number;
  headers: Headers;
  body: { data?: T | null; errors?: { message: string; path?: string[]; extensions?: Record<string, any> }[] };
}

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
};

export async function startTestServer(
  options: {
    database?: Partial<Config['database']>;
    logger?: Logger;
    config?: Partial<Pick<Config, 'env' | 'apiKeyCacheTtlMs' | 'holdSweepIntervalMs' | 'claimBatchMax' | 'rateLimit' | 'graphql' | 'corsOrigins' | 'metricsToken'>>;
    redis?: Redis;
    /** Use this database instead of a fresh one (several servers on one database). */
    databaseUrl?: string;
  } = {},
): Promise<TestServer> {
  const database = options.databaseUrl ? { url: options.databaseUrl, drop: async () => undefined } : await createTestDatabase();
  const db = createDatabase({ ...TEST_DATABASE_CONFIG, ...options.database, url: database.url });
  const logger = options.logger ?? createLogger({ env: 'test', level: process.env.TEST_LOG_LEVEL });
  const server: TesseraServer = await createServer({
    // Group claims on, as in production, unless TESSERA_TEST_CLAIM_BATCH_MAX says otherwise: every
    // race test then exercises the group statement (and its fallbacks) as well as the single one.
    config: { env: 'test', adminApiKey: ADMIN_KEY, shutdownGraceMs: 5_000, claimBatchMax: Number(process.env.TESSERA_TEST_CLAIM_BATCH_MAX ?? 32), ...options.config },
    db,
    logger,
    redis: options.redis,
  });
  const { port } = await server.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${port}/graphql`;
  const sql = new Pool({ connectionString: database.url, max: 4 });
  sql.on('error', () => undefined);

  const gql: TestServer['gql'] = async (key, query, variables) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (key !== null) headers.authorization = `Bearer ${key}`;
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
    return { status: res.status, headers: res.headers, body: (await res.json()) as GraphQLResponse<never>['body'] };
  };
  const must = async <T>(key: string, query: string, variables?: Record<string, unknown>): Promise<T> => {
    const res = await gql<T>(key, query, variables);
    if (res.body.errors?.length || !res.body.data) throw new Error(`GraphQL failed: ${JSON.stringify(res.body)}`);
    return res.body.data;
  };

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
    async stop() {
      await server.stop();
      await db.close();
      await sql.end();
      await database.drop();
    },
  };
  return helpers;
}

export const CLAIM = `mutation Claim($input: ClaimTicketInput!) {
  claimTicket(input: $input) {
    allocation { id sequence status holder metadata idempotencyKey ticket { id code status } partner { id } campaign { id } }
    error { code message }
  }
}`;

export interface ClaimPayload {
  claimTicket: {
    allocation: null | {
      id: string;
      sequence: number;
      status: string;
      holder: string;
      metadata: unknown;
      idempotencyKey: string | null;
      ticket: { id: string; code: string; status: string };
      partner: { id: string };
      campaign: { id: string };
    };
    error: null | { code: string; message: string };
  };
}

/** Invariants checked in the database itself, after any storm. */
export async function assertPoolInvariants(sql: Pool, campaignId: string): Promise<{ total: number; allocated: number; available: number }> {
  const { rows } = await sql.query(
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE status = 'ALLOCATED')::int AS allocated,
            count(*) FILTER (WHERE status = 'HELD')::int AS held,
            count(*) FILTER (WHERE status = 'AVAILABLE')::int AS available
       FROM tickets WHERE campaign_id = $1`,
    [campaignId],
  );
  const stats = rows[0];
  const live = await sql.query(
    `SELECT count(*)::int AS live, count(DISTINCT ticket_id)::int AS distinct_tickets
       FROM allocations WHERE campaign_id = $1 AND status IN ('ACTIVE', 'HELD')`,
    [campaignId],
  );
  // No ticket twice; every ALLOCATED ticket has exactly one live allocation and vice versa.
  expect(live.rows[0].live).toBe(live.rows[0].distinct_tickets);
  expect(live.rows[0].live).toBe(stats.allocated + stats.held);
  const mismatched = await sql.query(
    `SELECT count(*)::int AS n FROM tickets t
       LEFT JOIN allocations a ON a.campaign_id = t.campaign_id AND a.ticket_id = t.id AND a.status IN ('ACTIVE', 'HELD')
      WHERE t.campaign_id = $1
        AND ((t.status = 'AVAILABLE') <> (a.id IS NULL)
          OR (t.status = 'ALLOCATED' AND a.status <> 'ACTIVE')
          OR (t.status = 'HELD' AND a.status <> 'HELD'))`,
    [campaignId],
  );
  expect(mismatched.rows[0].n).toBe(0);
  expect(stats.allocated + stats.held + stats.available).toBe(stats.total);
  // The stats counters (kept by triggers) agree with the tickets themselves.
  const counters = await sql.query(
    `SELECT sum(total)::int AS total, sum(allocated)::int AS allocated, sum(held)::int AS held
       FROM campaign_counters WHERE campaign_id = $1`,
    [campaignId],
  );
  expect(counters.rows[0]).toEqual({ total: stats.total, allocated: stats.allocated, held: stats.held });
  return stats;
}
