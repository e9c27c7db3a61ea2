// A ballot of a million entries: a BALLOT campaign of BALLOT_TICKETS tickets, BALLOT_ENTRIES entries
// of four partners written straight into the table (entering is enterBallot's one-row insert; the
// draw is what scales), drawBallot over HTTP, then what the draw wrote checked — the winners' holds
// exactly their quantities, within the pool — and bin/verify-ballot.js on the published fields.
// Bar: the draw in under 60 s.
import { createRequire } from 'node:module';
import { ADMIN_KEY, gql } from '../harness';
import type { Experiment } from './context';
import { fmt, type Report } from './report';
import { BALLOT_ENTRIES, BALLOT_TICKETS } from './settings';

const { verifyBallot } = createRequire(__filename)('../../bin/verify-ballot.js') as {
  verifyBallot(ballot: unknown, entries: unknown[]): { ok: boolean; summary?: string; mismatch?: string };
};

export const ballot: Experiment = {
  name: 'ballot',
  summary: `drawBallot of ${fmt(BALLOT_ENTRIES)} entries over HTTP, and bin/verify-ballot.js on what it wrote`,
  async run(ctx, report: Report) {
    const { sql, failures } = ctx;
    const url = ctx.server.url;
    const partners: string[] = [];
    for (let i = 0; i < 4; i += 1) partners.push((await gql(url, ADMIN_KEY, `mutation { createPartner(input: { name: "ballot ${i}" }) { partner { id } } }`)).createPartner.partner.id);
    const id = (await gql(url, ADMIN_KEY, 'mutation { createCampaign(input: { name: "ballot", mode: BALLOT }) { campaign { id } } }')).createCampaign.campaign.id as string;
    await gql(url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: ${BALLOT_TICKETS}) { loaded } }`);
    await gql(url, ADMIN_KEY, `mutation { openCampaign(id: "${id}") { campaign { id } } }`);
    await sql.query(
      `INSERT INTO ballot_entries (campaign_id, partner_id, holder, quantity)
       SELECT $1, ($2::uuid[])[1 + g % 4], 'entrant-' || g, 1 + (g::bigint * 7919) % 4 FROM generate_series(1, ${BALLOT_ENTRIES}) g`,
      [id, partners],
    );
    await sql.query('VACUUM ANALYZE ballot_entries');
    const t0 = performance.now();
    const { drawBallot } = await gql(url, ADMIN_KEY, `mutation { drawBallot(campaignId: "${id}") { ballot { seedCommitment seed entriesDigest entryCount winners drawnAt tickets partnerLimits } } }`);
    const drawMs = performance.now() - t0;
    const drawn = drawBallot.ballot;
    const { rows } = await sql.query(
      `SELECT (SELECT count(*)::int FROM allocations WHERE campaign_id = $1 AND status = 'HELD') AS held,
              (SELECT COALESCE(sum(quantity), 0)::int FROM ballot_entries WHERE campaign_id = $1 AND won_in_draw) AS won`,
      [id],
    );
    if (rows[0].held !== rows[0].won || rows[0].held > BALLOT_TICKETS) failures.push(`ballot: ${rows[0].held} holds for ${rows[0].won} tickets won of ${BALLOT_TICKETS}`);
    const entries = (
      await sql.query(
        `SELECT id, quantity, status::text, rank, won_in_draw AS "wonInDraw", partner_id AS "partnerId" FROM ballot_entries WHERE campaign_id = $1 ORDER BY rank`,
        [id],
      )
    ).rows;
    const t1 = performance.now();
    const result = verifyBallot(drawn, entries);
    const verifyMs = performance.now() - t1;
    if (!result.ok) failures.push(`ballot: the verifier says ${result.mismatch}`);
    const verdict = result.ok ? 'verified' : `MISMATCH: ${result.mismatch}`;
    report.record(`drawBallot of ${fmt(BALLOT_ENTRIES)} entries (quantity 1–4) on ${fmt(BALLOT_TICKETS)} tickets, over HTTP`, `${(drawMs / 1000).toFixed(1)} s  ${fmt(drawn.winners)} winners`);
    report.record(`bin/verify-ballot.js on those ${fmt(BALLOT_ENTRIES)} entries (read from the database)`, `${(verifyMs / 1000).toFixed(1)} s  ${verdict}`);
    report.bar({ what: `drawBallot of ${fmt(BALLOT_ENTRIES)} entries`, figure: `${(drawMs / 1000).toFixed(1)} s`, target: '< 60 s', pass: drawMs < 60_000 });
  },
};
