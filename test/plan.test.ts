// The claim uses its partial index on purpose, whatever the statistics say (PERFORMANCE.md
// pitfall 2: with real statistics on one dominant campaign the planner once chose the primary key
// plus a filter that walked every allocated row).
import { OPERATOR_PARTNER_ID } from '../src/auth';
import { claimSql } from '../src/db/claimTicket';
import { startTestServer, type TestServer } from './helpers/testServer';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

interface PlanNode { 'Node Type': string; 'Index Name'?: string; 'Relation Name'?: string; Plans?: PlanNode[] }
const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

async function scans(campaignId: string, wait: boolean, variant: { kind: 'claim' | 'hold'; quantity: number }, relation = 'tickets'): Promise<string[]> {
  const sql = claimSql({
    kind: variant.kind,
    quantity: variant.quantity,
    ttlSeconds: variant.kind === 'hold' ? 60 : null,
    campaignId,
    partnerId: OPERATOR_PARTNER_ID,
    holder: 'planner',
    metadata: null,
    idempotencyKey: null,
    requestHash: null,
    start: 1_000_000_000,
    wait,
  });
  const { rows } = await server.sql.query(`EXPLAIN (FORMAT JSON) ${sql.text}`, sql.values as unknown[]);
  return nodes(rows[0]['QUERY PLAN'][0].Plan)
    .filter((n) => n['Relation Name'] === relation && n['Node Type'] !== 'ModifyTable')
    .map((n) => `${n['Node Type']}:${n['Index Name'] ?? ''}`);
}

test.each([
  ['an empty campaign', 0],
  ['a campaign 99% allocated, with fresh statistics', 0.99],
])('every ticket pick of the claim scans the AVAILABLE partial index on %s', async (_label, fill) => {
  const campaignId = await server.openCampaignWith(0);
  await server.sql.query(
    `INSERT INTO tickets (campaign_id, code, status)
     SELECT $1, 'P' || g, CASE WHEN g <= $2::float8 * 20000 THEN 'ALLOCATED'::ticket_status ELSE 'AVAILABLE' END
       FROM generate_series(1, 20000) g`,
    [campaignId, fill],
  );
  await server.sql.query('ANALYZE tickets');
  for (const variant of [{ kind: 'claim', quantity: 1 }, { kind: 'claim', quantity: 3 }, { kind: 'hold', quantity: 1 }] as const) {
    for (const wait of [false, true]) {
      const ticketScans = await scans(campaignId, wait, variant);
      // The picks and the contended check use the partial index; the UPDATE finds its rows by
      // primary key; nothing scans the campaign.
      const picks = ticketScans.filter((s) => !s.endsWith(':tickets_pkey'));
      expect(picks.length).toBeGreaterThanOrEqual(2);
      for (const scan of picks) expect(scan).toMatch(/Index.*Scan:tickets_available_pick_idx/);
      expect(ticketScans.filter((s) => s.endsWith(':tickets_pkey')).length).toBe(1);
      for (const scan of await scans(campaignId, wait, variant, 'allocations')) expect(scan).toMatch(/^(Index|Bitmap)/);
    }
  }
});
