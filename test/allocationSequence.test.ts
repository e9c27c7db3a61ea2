// Allocation.sequence is the allocation's number in its campaign (issue 27): 1 for a fresh
// campaign's first allocation — the README's example — then strictly increasing with allocation
// order, whichever path allocated it (a claim alone or in a group, claimTickets, a hold, a waitlist
// offer, a ballot's winners), however other campaigns' claims interleave; the API, the CSV export
// (bin/tessera.js export) and the webhook events carry the same number. Each campaign draws from a
// sequence of its own (prisma/functions/tessera_allocation_sequence.sql).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from './helpers/tempDirs';
import { ADMIN_KEY, CLAIM, startTestServer, type ClaimPayload, type TestServer } from './helpers/testServer';

const run = promisify(execFile);
const BIN = path.resolve(__dirname, '../bin/tessera.js');

const HOLD = 'mutation($input: HoldTicketInput!) { holdTicket(input: $input) { allocation { id sequence } error { code } } }';
const CLAIM_MANY = 'mutation($input: ClaimTicketsInput!) { claimTickets(input: $input) { allocations { id sequence } error { code } } }';
const ALLOCATIONS = `query($id: ID!) {
  campaign(id: $id) { allocations(first: 100) { edges { node { id sequence holder allocatedAt } } } }
}`;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ config: { holdSweepIntervalMs: 100 } });
});
afterAll(() => server.stop());

const claim = async (key: string, campaignId: string, holder: string) =>
  (await server.gql<ClaimPayload>(key, CLAIM, { input: { campaignId, holder } })).body.data!.claimTicket;
async function allocations(campaignId: string): Promise<{ id: string; sequence: number; holder: string; allocatedAt: string }[]> {
  const res = await server.gql<{ campaign: { allocations: { edges: { node: { id: string; sequence: number; holder: string; allocatedAt: string } }[] } } }>(
    ADMIN_KEY,
    ALLOCATIONS,
    { id: campaignId },
  );
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.campaign.allocations.edges.map((e) => e.node);
}

test("a fresh campaign's first allocation is number 1, whatever other campaigns allocated before, and each path numbers on in allocation order", async () => {
  const partner = await server.createPartner('numbers');
  // Another campaign's allocations first: a number shared by every campaign would not start at 1.
  const busy = await server.openCampaignWith(10);
  for (let i = 0; i < 4; i += 1) await claim(partner.apiKey, busy, `b${i}`);

  const campaignId = await server.openCampaignWith(20);
  const first = await claim(partner.apiKey, campaignId, 'first');
  expect(first.allocation!.sequence).toBe(1); // README, "A partner's flow": "sequence":1
  await claim(partner.apiKey, busy, 'interleaved');
  const many = (await server.gql(partner.apiKey, CLAIM_MANY, { input: { campaignId, holder: 'many', quantity: 2 } })).body.data!.claimTickets;
  expect(many.allocations.map((a: { sequence: number }) => a.sequence)).toEqual([2, 3]);
  const held = (await server.gql(partner.apiKey, HOLD, { input: { campaignId, holder: 'held', ttlSeconds: 60 } })).body.data!.holdTicket;
  expect(held.allocation.sequence).toBe(4);
  // A burst: the claims go alone and in group statements, all numbered 5…16, each once.
  const burst = await Promise.all(Array.from({ length: 12 }, (_, i) => claim(partner.apiKey, campaignId, `burst${i}`)));
  expect(burst.map((b) => b.allocation!.sequence).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 5));
  const rows = await allocations(campaignId);
  expect(rows.map((r) => r.sequence)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
  // Numbered in allocation order: allocatedAt never goes back as the number goes up.
  for (let i = 1; i < rows.length; i += 1) expect(Date.parse(rows[i]!.allocatedAt)).toBeGreaterThanOrEqual(Date.parse(rows[i - 1]!.allocatedAt));
  expect((await allocations(busy)).map((r) => r.sequence)).toEqual([1, 2, 3, 4, 5]);
});

test("a waitlist offer and a ballot's winners are numbered in their campaign's order too", async () => {
  const partner = await server.createPartner('offers');
  const waitlisted = await server.openCampaignWith(1, { releasePolicy: 'WAITLIST_FIRST' });
  const taken = await claim(partner.apiKey, waitlisted, 'a');
  const join = await server.gql(partner.apiKey, 'mutation($input: JoinWaitlistInput!) { joinWaitlist(input: $input) { entry { id } error { code } } }', {
    input: { campaignId: waitlisted, holder: 'w' },
  });
  expect(join.body.data!.joinWaitlist.error).toBeNull();
  await server.gql(partner.apiKey, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { error { code } } }', { id: taken.allocation!.id });
  expect((await allocations(waitlisted)).map((r) => [r.holder, r.sequence])).toEqual([
    ['a', 1],
    ['w', 2],
  ]);

  const ballot = await server.createCampaign({ mode: 'BALLOT' });
  await server.loadTickets(ballot, 3);
  await server.openCampaign(ballot);
  for (const holder of ['x', 'y', 'z']) {
    const entered = await server.gql(partner.apiKey, 'mutation($input: EnterBallotInput!) { enterBallot(input: $input) { error { code } } }', { input: { campaignId: ballot, holder } });
    expect(entered.body.data!.enterBallot.error).toBeNull();
  }
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { drawBallot(campaignId: $id) { ballot { winners } } }', { id: ballot });
  expect((await allocations(ballot)).map((r) => r.sequence)).toEqual([1, 2, 3]);
});

test('the CSV export numbers each allocation as the API does', async () => {
  const partner = await server.createPartner('export');
  const campaignId = await server.openCampaignWith(6);
  for (let i = 0; i < 5; i += 1) await claim(partner.apiKey, campaignId, `e${i}`);
  const { stdout } = await run(process.execPath, [BIN, 'export', '--campaign', campaignId, '--url', server.url.replace(/\/graphql$/, ''), '--key', ADMIN_KEY], {
    cwd: tempDir('tessera-export-'),
  });
  const lines = stdout.trim().split('\n');
  expect(lines[0]!.startsWith('sequence,allocation_id,')).toBe(true);
  const exported = lines.slice(1).map((line) => {
    const [sequence, id] = line.split(',');
    return { id: JSON.parse(id!), sequence: Number(sequence) }; // the id is quoted, as every text cell
  });
  expect(exported).toEqual((await allocations(campaignId)).map((r) => ({ id: r.id, sequence: r.sequence })));
  expect(exported.map((r) => r.sequence)).toEqual([1, 2, 3, 4, 5]);
});

test('a campaign made before the numbering was per campaign numbers on after its highest sequence; one made in SQL gets its sequence, and an allocation inserted by SQL is numbered from it', async () => {
  const partner = await server.createPartner('upgrade');
  const campaignId = await server.openCampaignWith(5);
  await claim(partner.apiKey, campaignId, 'old');
  // As before the upgrade: a number from the shared sequence, and no sequence of the campaign's own.
  await server.sql.query('UPDATE allocations SET sequence = 41 WHERE campaign_id = $1', [campaignId]);
  await server.sql.query('DROP SEQUENCE IF EXISTS ' + `allocation_sequence_${campaignId.replace(/-/g, '')}`);
  // The function file, applied on the upgrade, gives it one that continues after 41.
  await server.sql.query(readFileSync(path.resolve(__dirname, '../prisma/functions/tessera_campaign_sequence.sql'), 'utf8'));
  expect((await claim(partner.apiKey, campaignId, 'new')).allocation!.sequence).toBe(42);

  const { rows } = await server.sql.query(`INSERT INTO campaigns (name, status) VALUES ('by SQL', 'OPEN') RETURNING id`);
  const bySql: string = rows[0].id;
  await server.loadTickets(bySql, 2);
  expect((await claim(partner.apiKey, bySql, 'sql')).allocation!.sequence).toBe(1);
  // An insert of SQL's own is numbered by the row trigger too, whatever number it names.
  const inserted = await server.sql.query(
    `INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, status, sequence)
     SELECT campaign_id, id, $2, 'by SQL', 'ACTIVE', 1 FROM tickets WHERE campaign_id = $1 AND status = 'AVAILABLE' LIMIT 1
     RETURNING sequence`,
    [bySql, partner.id],
  );
  expect(Number(inserted.rows[0].sequence)).toBe(2);
  // A campaign deleted (Tessera never does; an operator might) takes its sequence with it.
  const gone: string = (await server.sql.query(`INSERT INTO campaigns (name) VALUES ('gone') RETURNING id`)).rows[0].id;
  const exists = async () => (await server.sql.query('SELECT to_regclass(tessera_allocation_sequence($1)) IS NOT NULL AS e', [gone])).rows[0].e;
  expect(await exists()).toBe(true);
  await server.sql.query('DELETE FROM campaigns WHERE id = $1', [gone]);
  expect(await exists()).toBe(false);
});
