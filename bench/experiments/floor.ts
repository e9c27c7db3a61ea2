// The floor and Tessera's claim statements alone, in a database of their own (bench/sqlClaims.ts),
// at 16 and 64 clients, alternating so that drift in the machine's speed falls on all of them alike:
//   - the floor: the MINIMAL claim of docs/PERFORMANCE.md (strategy A) on a bare ticket table, what
//     PostgreSQL itself does per claim here — the baseline of every claim bar;
//   - the first look a claimTicket arriving alone runs (claimOne(), the bar), a group of claims
//     sharing one statement (claimGroup(), per claim), and the general statement of holds,
//     claimTickets and second looks (claimStatement()), on Tessera's schema, against the floor;
//   - the minimal claim's PostgreSQL CPU per claim at COST_RATE (pgbench -R), the database half of
//     the cost experiment's baseline.
// Bar: claimOne() alone ÷ floor ≥ 0.50× at 16 and at 64 clients.
import { cpuDuring, treeCpu } from '../cpu';
import { GROUP_SIZE, SqlClaims, type SqlClaimResult } from '../sqlClaims';
import type { Experiment } from './context';
import { fmt, perSecond, ratio, sqlRate, us, type Report } from './report';
import { COST_RATE, COST_SECONDS, SECONDS, SQL_CLIENTS, SQL_ROWS } from './settings';

export const floor: Experiment = {
  name: 'floor',
  summary: "the floor (the minimal claim on a bare table) and Tessera's claim statements alone, 16 and 64 clients; the minimal claim's CPU",
  async run(ctx, report: Report) {
    const { failures, integrity } = ctx;
    const floors: Record<number, SqlClaimResult> = {};
    const statement: Record<number, SqlClaimResult> = {};
    const firstLook: Record<number, SqlClaimResult> = {};
    const group: Record<number, SqlClaimResult> = {};
    const sqlClaims = await SqlClaims.create(ctx.serverUrl, { floorRows: SQL_ROWS, statementRows: SQL_ROWS, pgbench: ctx.pgbench !== null });
    const tool = ctx.pgbench ? 'pgbench' : 'pg';
    ctx.figures.floorCpu = null;
    try {
      // PostgreSQL's whole server, read from /proc — where it runs here.
      if (ctx.postmaster) {
        const postmaster = ctx.postmaster;
        const measured = await cpuDuring(
          () => treeCpu(postmaster),
          () => sqlClaims.floorAtRate(16, COST_SECONDS, COST_RATE),
        );
        if (measured.result) {
          const floorCpu = { perClaim: measured.seconds / measured.result.claimed, rate: measured.result.claimsPerSecond };
          ctx.figures.floorCpu = floorCpu;
          report.record(`CPU per claim: the minimal claim at ${COST_RATE}/s offered (pgbench -R, 16 clients, ${COST_SECONDS} s)`, `PostgreSQL ${us(floorCpu.perClaim)}  (${fmt(floorCpu.rate)} claims/s)`);
        }
      }
      for (const c of SQL_CLIENTS) {
        floors[c] = await sqlClaims.floor(c, SECONDS);
        report.record(`floor: the minimal claim (PERFORMANCE.md, A), bare table, ${tool}, ${c} clients`, perSecond(sqlRate(floors[c]!)));
        if (floors[c]!.failed > 0) failures.push(`the floor at ${c} clients: ${floors[c]!.failed} statements failed`);
        for (const [which, label, into] of [
          ['statement', "statement alone: tessera_claim_tickets (the second look's), Tessera's schema", statement],
          ['firstLook', "first look alone: tessera_claim_one (a claimTicket arriving alone), Tessera's schema", firstLook],
          ['group', `a group alone: tessera_claim_group of ${GROUP_SIZE} claimTickets in one call, Tessera's schema, per claim`, group],
        ] as const) {
          const s = await sqlClaims.statement(which, c, SECONDS);
          into[c] = s;
          const lostHere = Math.max(0, s.check.allocatedTickets - s.check.activeAllocations);
          const twiceHere = s.check.twice + Math.max(0, s.check.activeAllocations - s.check.allocatedTickets);
          integrity.lost += lostHere;
          integrity.duplicated += twiceHere;
          if (lostHere + twiceHere > 0) failures.push(`${label} at ${c} clients: ${JSON.stringify(s.check)}`);
          if (s.failed > 0) failures.push(`${label} at ${c} clients: ${s.failed} statements failed`);
          if (s.claimed === 0) failures.push(`${label} at ${c} clients: nothing claimed`);
          const empty = s.statements - s.claimed;
          report.record(
            `${label}, ${tool}, ${c} clients`,
            `${perSecond(sqlRate(s))}  ${ratio(s.claimsPerSecond, floors[c]!.claimsPerSecond)} floor` +
              `${empty > 0 ? `  (${fmt(empty)} of ${fmt(s.statements)} statements took nothing)` : ''}  lost ${lostHere}, duplicated ${twiceHere}`,
          );
        }
      }
    } finally {
      await sqlClaims.drop(ctx.serverUrl);
    }
    ctx.figures.floor = floors;
    ctx.figures.firstLook = firstLook;
    // "Tessera's claim statement alone": the statement a claimTicket runs — its first look, tessera_claim_one
    // when it arrives alone (a group shares tessera_claim_group, shown beside it); tessera_claim_tickets is the
    // general statement of holds, claimTickets and a claim's second look, measured above too.
    for (const c of SQL_CLIENTS) report.atLeast(`claimTicket's statement alone (tessera_claim_one) ÷ floor, ${c} clients`, firstLook[c]!.claimsPerSecond / floors[c]!.claimsPerSecond, 0.5);
  },
};
