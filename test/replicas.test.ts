// Read replicas (issue 19) against a real streaming standby: the reports an operator reads are
// served by the replica (shown by pausing its replay: they go stale), a replica lagging beyond
// READ_MAX_LAG_MS is skipped (the same reads are fresh again), and a partner always reads its own
// claim at once (read-your-writes), whatever the replica.
import { Client } from 'pg';
import { migrate } from '../src/db/migrate';
import { startReplicaPair, type ReplicaPair } from './helpers/replica';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from './helpers/testServer';
import { sleep, until } from './helpers/time';

let pair: ReplicaPair | null;
let standby: Client;
const servers: TestServer[] = [];

beforeAll(async () => {
  pair = await startReplicaPair();
  if (!pair) return;
  await migrate(pair.primaryUrl);
  standby = new Client({ connectionString: pair.standbyUrl });
  standby.on('error', () => undefined);
  await standby.connect();
}, 120_000);
afterAll(async () => {
  for (const s of servers) await s.stop();
  await standby?.end().catch(() => undefined);
  pair?.stop();
});

const start = async (maxLagMs: number) => {
  const server = await startTestServer({ databaseUrl: pair!.primaryUrl, config: { readReplicas: { urls: [pair!.standbyUrl], maxLagMs } } });
  servers.push(server);
  return server;
};
const TIMELINE = 'query($id: ID!) { campaign(id: $id) { timeline(bucket: DAY) { allocated } allocations(first: 10) { totalCount } } }';
const allocatedSeen = async (server: TestServer, id: string) => {
  const c = (await server.gql(ADMIN_KEY, TIMELINE, { id })).body.data!.campaign;
  return { timeline: c.timeline.reduce((n: number, p: { allocated: number }) => n + p.allocated, 0), list: c.allocations.totalCount as number };
};

test('reports are served by the replica, a lagging replica is skipped, and a partner reads its own claim at once', async () => {
  if (!pair) {
    console.warn('skipped: no PostgreSQL binaries with pg_basebackup on this machine (set PG_BIN)');
    return;
  }
  const patient = await start(60_000); // follows the replica however far behind it is (within a minute)
  const partner = await patient.createPartner('replicated');
  const id = await patient.openCampaignWith(10);
  const first = await patient.gql(partner.apiKey, CLAIM, { input: { campaignId: id, holder: 'one' } });
  expect(first.body.data!.claimTicket.error).toBeNull();
  await until(async () => (await allocatedSeen(patient, id)).timeline === 1, { message: 'the replica to replay the first claim', timeoutMs: 10_000 });

  // Replay paused: the replica falls behind while the primary takes a second claim.
  await standby.query('SELECT pg_wal_replay_pause()');
  try {
    const second = await patient.gql(partner.apiKey, CLAIM, { input: { campaignId: id, holder: 'two' } });
    const allocation = second.body.data!.claimTicket.allocation;
    expect(allocation).not.toBeNull();
    // Read-your-writes: the partner's reads of its own allocations go to the primary.
    expect((await patient.gql(partner.apiKey, 'query($id: ID!) { allocation(id: $id) { id status } }', { id: allocation.id })).body.data!.allocation).toEqual({ id: allocation.id, status: 'ACTIVE' });
    expect((await patient.gql(partner.apiKey, 'query($id: ID!) { campaign(id: $id) { allocations { totalCount } } }', { id })).body.data!.campaign.allocations.totalCount).toBe(2);
    // The operator's reports come from the replica: still one allocation there.
    expect(await allocatedSeen(patient, id)).toEqual({ timeline: 1, list: 1 });
    // The claim path and the live figures never read the replica.
    expect((await patient.gql(ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { stats { allocated } } }', { id })).body.data!.campaign.stats.allocated).toBe(2);

    // A server that tolerates 300 ms of lag skips this replica once it is further behind.
    await sleep(600);
    const strict = await start(300);
    await until(async () => (await allocatedSeen(strict, id)).timeline === 2, { message: 'the lagging replica to be skipped', timeoutMs: 5_000 });
    expect(await allocatedSeen(strict, id)).toEqual({ timeline: 2, list: 2 });
  } finally {
    await standby.query('SELECT pg_wal_replay_resume()');
  }
  // Replay resumed: the replica catches up and serves the reports again, now fresh.
  await until(async () => (await allocatedSeen(patient, id)).timeline === 2, { message: 'the replica to catch up', timeoutMs: 10_000 });
}, 120_000);
