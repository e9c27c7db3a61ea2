// The claim uses its partial index on purpose, whatever the statistics say (docs/PERFORMANCE.md
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

/**
 * The plan's scans of one relation. `generic`: the plan the server really runs — its connections
 * set plan_cache_mode = force_generic_plan, so a prepared claim is planned once, without the
 * campaign's id or statistics (see src/db/client.ts).
 */
async function scans(
  campaignId: string,
  wait: boolean,
  variant: { kind: 'claim' | 'hold'; quantity: number },
  relation = 'tickets',
  generic = false,
): Promise<string[]> {
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
  let plan: PlanNode;
  if (generic) {
    const client = await server.sql.connect();
    try {
      await client.query('SET plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE plan_probe AS ${sql.text}`);
      const literal = (v: unknown) => (v === null ? 'NULL' : typeof v === 'number' ? String(v) : client.escapeLiteral(String(v)));
      const args = sql.values.map(literal).join(', ');
      plan = (await client.query(`EXPLAIN (FORMAT JSON) EXECUTE plan_probe(${args})`)).rows[0]['QUERY PLAN'][0].Plan;
    } finally {
      await client.query('DEALLOCATE ALL').catch(() => undefined);
      await client.query('RESET plan_cache_mode').catch(() => undefined);
      client.release();
    }
  } else {
    plan = (await server.sql.query(`EXPLAIN (FORMAT JSON) ${sql.text}`, sql.values as unknown[])).rows[0]['QUERY PLAN'][0].Plan;
  }
  return nodes(plan)
    .filter((n) => n['Relation Name'] === relation && n['Node Type'] !== 'ModifyTable')
    .map((n) => `${n['Node Type']}:${n['Index Name'] ?? ''}`);
}

test.each([
  ['an empty campaign', 0],
  ['a campaign 99% allocated, with fresh statistics', 0.99],
])('every ticket pick of the claim, custom or generic plan, scans the AVAILABLE partial index on %s', async (_label, fill) => {
  const campaignId = await server.openCampaignWith(0);
  await server.sql.query(
    `INSERT INTO tickets (campaign_id, code, status)
     SELECT $1, 'P' || g, CASE WHEN g <= $2::float8 * 20000 THEN 'ALLOCATED'::ticket_status ELSE 'AVAILABLE' END
       FROM generate_series(1, 20000) g`,
    [campaignId, fill],
  );
  await server.sql.query('ANALYZE tickets');
  for (const variant of [{ kind: 'claim', quantity: 1 }, { kind: 'claim', quantity: 3 }, { kind: 'hold', quantity: 1 }] as const) {
    for (const [wait, generic] of [[false, false], [true, false], [false, true], [true, true]] as const) {
      const ticketScans = await scans(campaignId, wait, variant, 'tickets', generic);
      // The picks and the contended check use the partial index of AVAILABLE tickets (those of
      // allotments, ALLOTTED tickets, theirs; the WAITLIST_FIRST check of returned tickets, RETURNED
      // ones, theirs); the UPDATE finds its rows by primary key; nothing scans the campaign.
      const picks = ticketScans.filter((s) => !s.endsWith(':tickets_pkey'));
      expect(picks.filter((s) => s.endsWith(':tickets_available_pick_idx')).length).toBeGreaterThanOrEqual(2);
      for (const scan of picks) expect(scan).toMatch(/Index.*Scan:tickets_(available_pick|allotted|returned)_idx/);
      expect(ticketScans.filter((s) => s.endsWith(':tickets_pkey')).length).toBe(1);
      for (const scan of await scans(campaignId, wait, variant, 'allocations', generic)) expect(scan).toMatch(/^(Index|Bitmap)/);
    }
  }
});
