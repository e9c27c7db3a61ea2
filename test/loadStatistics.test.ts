// The statistics a load creates are made at the load (issue 30): a load past autovacuum's analyze
// threshold (50 + 10% of the rows last counted, by the server's own settings) answers only after an
// ANALYZE of tickets, so a campaign opened right after is planned with statistics, autovacuum on or
// off; a small load into a large table does not analyze; loads too small on their own add up.
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const LOAD = 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded duplicates } }';
const GENERATE = 'mutation($id: ID!, $count: Int!) { generateTickets(campaignId: $id, count: $count) { loaded duplicates } }';

async function ok(query: string, variables: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await server.gql(ADMIN_KEY, query, variables);
  expect(res.body.errors).toBeUndefined();
  return res.body.data!;
}

/** What the server last counted of tickets (pg_class.reltuples: -1 never analyzed) and whether pg_stats has its columns. */
async function counted(): Promise<{ reltuples: number; columns: number }> {
  const { rows } = await server.sql.query(
    "SELECT c.reltuples::float8 AS reltuples, (SELECT count(*)::int FROM pg_stats WHERE tablename = 'tickets') AS columns FROM pg_class c WHERE c.oid = 'tickets'::regclass",
  );
  return rows[0];
}

/** Rows changed since tickets' last ANALYZE, as the server counts them. */
async function modifiedSinceAnalyze(): Promise<number> {
  const { rows } = await server.sql.query("SELECT n_mod_since_analyze::int AS n FROM pg_stat_user_tables WHERE relname = 'tickets'");
  return rows[0].n;
}

const codes = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

test('a load past the threshold answers after the ANALYZE it made due; a small one does not analyze; small loads add up', async () => {
  const campaignId = await server.openCampaignWith(0);
  expect(await counted()).toEqual({ reltuples: -1, columns: 0 }); // as migrated: never analyzed

  // generateTickets into the never-analyzed table: analyzed before it answers.
  expect((await ok(GENERATE, { id: campaignId, count: 5_000 })).generateTickets).toEqual({ loaded: 5_000, duplicates: 0 });
  const first = await counted();
  expect(first.reltuples).toBe(5_000);
  expect(first.columns).toBeGreaterThan(0);
  expect(await modifiedSinceAnalyze()).toBe(0);

  // 10 more codes (and 10 duplicates, which change nothing): under 50 + 10% of 5,000, not analyzed.
  expect((await ok(LOAD, { id: campaignId, codes: [...codes('small', 10), ...codes('small', 10)] })).loadTickets).toEqual({ loaded: 10, duplicates: 10 });
  expect((await counted()).reltuples).toBe(5_000);

  // 400 codes: 410 rows changed since the ANALYZE, under 550: not analyzed yet ...
  await ok(LOAD, { id: campaignId, codes: codes('a', 400) });
  expect((await counted()).reltuples).toBe(5_000);
  // ... and the server has counted them by the time the load answered (each load flushes its
  // statistics at its commit: counted late, they could land after the ANALYZE they caused) ...
  expect(await modifiedSinceAnalyze()).toBe(410);
  // ... and 200 more make 610: analyzed, every row counted.
  await ok(LOAD, { id: campaignId, codes: codes('b', 200) });
  expect((await counted()).reltuples).toBe(5_610);
  expect(await modifiedSinceAnalyze()).toBe(0);
});
