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

async function ticketScans(campaignId: string, wait: boolean): Promise<string[]> {
  const sql = claimSql({
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
    .filter((n) => n['Relation Name'] === 'tickets' && n['Node Type'] !== 'ModifyTable')
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
  for (const wait of [false, true]) {
    const scans = await ticketScans(campaignId, wait);
    // The picks (two for SKIP LOCKED, one waiting) and the contended check use the partial index;
    // the UPDATE finds its one row by primary key.
    const picks = scans.filter((s) => !s.endsWith(':tickets_pkey'));
    expect(picks.length).toBeGreaterThanOrEqual(wait ? 1 : 2);
    for (const scan of picks) expect(scan).toMatch(/Index.*Scan:tickets_available_pick_idx/);
    expect(scans.filter((s) => s.endsWith(':tickets_pkey')).length).toBeLessThanOrEqual(1);
  }
});
