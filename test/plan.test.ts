// The claim uses its partial index on purpose, whatever the statistics say (docs/PERFORMANCE.md
// pitfall 2: with real statistics on one dominant campaign the planner once chose the primary key
// plus a filter that walked every allocated row). The claims are PL/pgSQL functions
// (tessera_claim_tickets: holds, claimTickets, second looks; tessera_claim_one: the first look), so
// the plans checked are those of the statements inside them, as PostgreSQL runs them: auto_explain,
// loaded in the test's session, hands every nested statement's plan to the client as a NOTICE.
import type { PoolClient } from 'pg';
import { OPERATOR_PARTNER_ID } from '../src/auth';
import { claimStatement } from '../src/db/claimTicket';
import { startTestServer, type TestServer } from './helpers/testServer';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

interface PlanNode { 'Node Type': string; 'Index Name'?: string; 'Relation Name'?: string; Plans?: PlanNode[] }
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

/** Scans of `relation` in the plans, as `Node Type:Index Name`. */
const scansOf = (plans: PlanNode[], relation: string): string[] =>
  plans
    .flatMap(nodes)
    .filter((n) => n['Relation Name'] === relation && n['Node Type'] !== 'ModifyTable')
    .map((n) => `${n['Node Type']}:${n['Index Name'] ?? ''}`);

test.each([
  ['an empty campaign', 0],
  ['a campaign 99% allocated, with fresh statistics', 0.99],
])('every ticket pick of the claims, custom or generic plan, scans the AVAILABLE partial index on %s', async (_label, fill) => {
  const campaignId = await server.openCampaignWith(0);
  await server.sql.query(
    `INSERT INTO tickets (campaign_id, code, status)
     SELECT $1, 'P' || g, CASE WHEN g <= $2::float8 * 20000 THEN 'ALLOCATED'::ticket_status ELSE 'AVAILABLE' END
       FROM generate_series(1, 20000) g`,
    [campaignId, fill],
  );
  await server.sql.query('ANALYZE tickets');
  const client = await server.sql.connect();
  try {
    await client.query("LOAD 'auto_explain'");
    await client.query(
      "SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_format = json; SET auto_explain.log_level = notice; SET client_min_messages = notice",
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
      text: 'SELECT * FROM tessera_claim_one($1::uuid, $2::uuid, $3::text, NULL::jsonb, NULL::text, NULL::text, $4::integer)',
      values: [campaignId, OPERATOR_PARTNER_ID, 'planner', 1_000_000_000],
    });
    for (const call of calls) {
      for (const generic of [false, true]) {
        const plans = await plansOf(client, call, generic);
        const ticketScans = scansOf(plans, 'tickets');
        // The picks use the partial index of AVAILABLE tickets (those of allotments, ALLOTTED tickets,
        // theirs); the UPDATE finds its rows by primary key, as does the foreign key's check of the
        // allocation; nothing scans the campaign.
        const picks = ticketScans.filter((s) => !s.endsWith(':tickets_pkey'));
        expect({ call: call.label, generic, available: picks.some((s) => s.endsWith(':tickets_available_pick_idx')) }).toEqual({ call: call.label, generic, available: true });
        for (const scan of picks) expect({ call: call.label, generic, scan }).toEqual({ call: call.label, generic, scan: expect.stringMatching(/Index.*Scan:tickets_(available_pick|allotted|returned)_idx/) });
        for (const scan of ticketScans.filter((s) => s.endsWith(':tickets_pkey'))) expect({ call: call.label, generic, scan }).toEqual({ call: call.label, generic, scan: 'Index Scan:tickets_pkey' });
        expect({ call: call.label, generic, updates: ticketScans.some((s) => s.endsWith(':tickets_pkey')) }).toEqual({ call: call.label, generic, updates: true });
        for (const scan of scansOf(plans, 'allocations')) expect({ call: call.label, generic, scan }).toEqual({ call: call.label, generic, scan: expect.stringMatching(/^(Index|Bitmap)/) });
      }
    }
  } finally {
    client.release();
  }
});
