// The claim uses its partial index on purpose, whatever the statistics say (with real statistics on one dominant campaign the planner once chose the primary key
// plus a filter that walked every allocated row). The claims are PL/pgSQL functions
// (tessera_claim_tickets: holds, claimTickets, second looks; tessera_claim_one: the first look;
// tessera_claim_group and tessera_claim_campaign_group: groups of first looks), so
// the plans checked are those of the statements inside them, as PostgreSQL runs them: auto_explain,
// loaded in the test's session, hands every nested statement's plan to the client as a NOTICE.
import type { PoolClient } from 'pg';
import { OPERATOR_PARTNER_ID } from '../src/auth';
import { claimStatement } from '../src/claim/secondLook';
import { startTestServer, type TestServer } from './helpers/testServer';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}
const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

/** The plans of every statement a call runs, in a transaction rolled back afterwards. */
async function plansOf(client: PoolClient, call: { text: string; values: unknown[] }, generic: boolean): Promise<PlanNode[]> {
  const plans: PlanNode[] = [];
  const onNotice = (notice: { message?: string }) => {
    const json = notice.message?.split('plan:\n')[1];
    if (json) plans.push((JSON.parse(json) as { Plan: PlanNode }).Plan);
  };
  client.on('notice', onNotice);
  try {
    // `generic`: the plans the server really runs — its connections set plan_cache_mode =
    // force_generic_plan, so each statement is planned once, without the campaign's id or statistics
    // (src/db/sessionSettings.ts); else one planned for these values.
    await client.query(`SET plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}`);
    await client.query('BEGIN');
    await client.query(call.text, call.values);
  } finally {
    await client.query('ROLLBACK');
    client.off('notice', onNotice);
  }
  return plans;
}

/** Rows each scan of `relation` went through (returned, and read but filtered out), as `Node Type:Index Name rows`. */
const rowsReadOf = (plans: PlanNode[], relation: string): string[] =>
  plans
    .flatMap(nodes)
    .filter((n) => n['Relation Name'] === relation && n['Node Type'] !== 'ModifyTable')
    .map((n) => {
      const read = (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0);
      return `${n['Node Type']}:${n['Index Name'] ?? ''} ${read}`;
    });

/** Scans of `relation` in the plans, as `Node Type:Index Name`. */
const scansOf = (plans: PlanNode[], relation: string): string[] =>
  plans
    .flatMap(nodes)
    .filter((n) => n['Relation Name'] === relation && n['Node Type'] !== 'ModifyTable')
    .map((n) => `${n['Node Type']}:${n['Index Name'] ?? ''}`);

// The first case runs on the table as a load leaves it: never analyzed (autovacuum, where it is on,
// comes a minute or more later). Its plans must be as good as with statistics: that is the
// statements' shape, not the statistics (docs/PERFORMANCE.md).
test.each([
  ['a freshly loaded campaign, the table never analyzed', 0, false],
  ['an empty campaign', 0, true],
  ['a campaign 99% allocated, with fresh statistics', 0.99, true],
])('every ticket pick of the claims, custom or generic plan, scans the AVAILABLE partial index on %s, and no scan reads more tickets than the claim takes', async (_label, fill, analyzed) => {
  const campaignId = await server.openCampaignWith(0);
  await server.sql.query(
    `INSERT INTO tickets (campaign_id, code, status)
     SELECT $1, 'P' || g, CASE WHEN g <= $2::float8 * 20000 THEN 'ALLOCATED'::ticket_status ELSE 'AVAILABLE' END
       FROM generate_series(1, 20000) g`,
    [campaignId, fill],
  );
  const { rows: stats } = await server.sql.query("SELECT count(*)::int AS n FROM pg_stats WHERE tablename = 'tickets'");
  if (analyzed) await server.sql.query('ANALYZE tickets');
  else expect(stats[0].n).toBe(0); // never analyzed: the case is what it says
  const client = await server.sql.connect();
  try {
    await client.query("LOAD 'auto_explain'");
    await client.query(
      'SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_format = json; ' +
        'SET auto_explain.log_analyze = on; SET auto_explain.log_timing = off; SET auto_explain.log_level = notice; SET client_min_messages = notice',
    );
    const calls: { label: string; text: string; values: unknown[] }[] = [];
    for (const variant of [{ kind: 'claim', quantity: 1 }, { kind: 'claim', quantity: 3 }, { kind: 'hold', quantity: 1 }] as const) {
      for (const wait of [false, true]) {
        calls.push({
          label: `${variant.kind} ×${variant.quantity}${wait ? ', waiting' : ''}`,
          ...claimStatement({
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
          }),
        });
      }
    }
    calls.push({
      label: 'first look',
      text: 'SELECT * FROM tessera_claim_one($1::uuid, $2::uuid, $3::text, NULL::jsonb, NULL::text, NULL::text, $4::integer, true)',
      values: [campaignId, OPERATOR_PARTNER_ID, 'planner', 1_000_000_000],
    });
    const group = [1, 2, 3].map((i) => ({ campaignId, partnerId: OPERATOR_PARTNER_ID, holder: `planner-${i}` }));
    calls.push({
      label: 'group of 3',
      text: 'SELECT * FROM tessera_claim_group($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::text[], $6::text[], $7::integer[], true)',
      values: [group.map((r) => r.campaignId), group.map((r) => r.partnerId), group.map((r) => r.holder), [null, null, null], [null, null, null], [null, null, null], [1_000_000_000, 1_000_000_000, 1_000_000_000]],
    });
    calls.push({
      label: 'group of 3 of one campaign (Citus)',
      text: 'SELECT * FROM tessera_claim_campaign_group($1::uuid, $2::uuid[], $3::text[], $4::jsonb[], $5::text[], $6::text[], $7::integer, false)',
      values: [campaignId, group.map((r) => r.partnerId), group.map((r) => r.holder), [null, null, null], [null, null, null], [null, null, null], 1_000_000_000],
    });
    for (const call of calls) {
      for (const generic of [false, true]) {
        const plans = await plansOf(client, call, generic);
        // (A Bitmap Heap Scan is judged by its Bitmap Index Scan, which names the index.)
        const ticketScans = scansOf(plans, 'tickets').filter((s) => !s.startsWith('Bitmap Heap Scan:'));
        // The picks use the partial index of AVAILABLE tickets (those of allotments, ALLOTTED tickets,
        // theirs); the UPDATE finds its rows by primary key (the group statement: where the pick found
        // them, by ctid), as does the foreign key's check of the allocation — a probe each, as an
        // index scan or a bitmap of one row; nothing scans the campaign.
        const isProbe = (s: string) => /^((Index|Bitmap Index) Scan:tickets_pkey|Tid Scan:)$/.test(s);
        const picks = ticketScans.filter((s) => !isProbe(s));
        expect({ call: call.label, generic, available: picks.some((s) => s.endsWith(':tickets_available_pick_idx')) }).toEqual({ call: call.label, generic, available: true });
        for (const scan of picks) expect({ call: call.label, generic, scan }).toEqual({ call: call.label, generic, scan: expect.stringMatching(/^Index (Only )?Scan:tickets_(available_pick|allotted|returned)_idx$/) });
        expect({ call: call.label, generic, updates: ticketScans.some(isProbe) }).toEqual({ call: call.label, generic, updates: true });
        // A claim of at most 3 tickets reads a few index entries, not the campaign's 20,000.
        for (const scan of rowsReadOf(plans, 'tickets')) expect({ call: call.label, generic, scan }).toEqual({ call: call.label, generic, scan: expect.stringMatching(/ [0-9]$/) });
        for (const scan of scansOf(plans, 'allocations')) expect({ call: call.label, generic, scan }).toEqual({ call: call.label, generic, scan: expect.stringMatching(/^(Index|Bitmap)/) });
      }
    }
  } finally {
    client.release();
  }
});
