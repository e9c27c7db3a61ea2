// A history of one chaos run and its checker. Every claim is an invocation with a unique
// idempotency key; each attempt's outcome is recorded. After the run the checker compares the
// history with what the API and the database say — by SQL, not by trusting the server.
import { verifyCampaign } from '../../src/db/verifyCampaign';
import type { Pool } from 'pg';
import { counterTotals, ticketCounts } from '../helpers/sql';
import type { ClaimRequest, Outcome } from './client';

export interface Attempt {
  startedAt: number;
  endedAt: number;
  outcome: Outcome;
  /** A retry made after the run to resolve an unknown outcome. */
  retry: boolean;
}

export interface Invocation {
  request: ClaimRequest;
  partnerKey: string;
  attempts: Attempt[];
}

export interface StatsRead {
  at: number;
  total: number;
  allocated: number;
  held: number;
  /** Unused tickets of live allotments. */
  allotted: number;
  available: number;
  /** Retired by the VOID release policy. */
  void: number;
}

export class History {
  readonly invocations: Invocation[] = [];
  readonly statsReads: StatsRead[] = [];
  /** When closeCampaign was acknowledged, and the allocations stored at that moment. */
  closeAck: { at: number; storedAtAck: number } | null = null;

  add(request: ClaimRequest, partnerKey: string): Invocation {
    const invocation = { request, partnerKey, attempts: [] };
    this.invocations.push(invocation);
    return invocation;
  }

  static last(invocation: Invocation): Outcome | undefined {
    return invocation.attempts.at(-1)?.outcome;
  }

  firstPass(): { ok: number; refused: number; unknown: number } {
    const counts = { ok: 0, refused: 0, unknown: 0 };
    for (const inv of this.invocations) {
      const first = inv.attempts.find((a) => !a.retry);
      if (first) counts[first.outcome.kind] += 1;
    }
    return counts;
  }

  retries(): number {
    return this.invocations.reduce((n, inv) => n + inv.attempts.filter((a) => a.retry).length, 0);
  }
}

export interface Verdict {
  violations: string[];
  final: { total: number; allocated: number; held: number; available: number; stored: number };
}

/**
 * The invariants (issue 3): call after every unknown has been retried to an answer.
 * `allowSoldOutWithAvailable` is never set by the scenarios; it exists to make the check's own test
 * (a history that must fail) readable.
 */
export async function checkHistory(history: History, sql: Pool, campaignId: string): Promise<Verdict> {
  const violations: string[] = [];
  const fail = (message: string) => violations.push(message);

  const { rows: allocations } = await sql.query(
    `SELECT a.id, a.idempotency_key, a.status, t.code, a.sequence
       FROM allocations a JOIN tickets t ON t.campaign_id = a.campaign_id AND t.id = a.ticket_id
      WHERE a.campaign_id = $1`,
    [campaignId],
  );
  const tickets = await ticketCounts(sql, campaignId);
  const live = allocations.filter((a) => a.status === 'ACTIVE' || a.status === 'HELD');

  // No ticket held by two live allocations; tickets and allocations agree.
  const byCode = new Map<string, number>();
  for (const a of live) byCode.set(a.code, (byCode.get(a.code) ?? 0) + 1);
  for (const [code, n] of byCode) if (n > 1) fail(`ticket ${code} has ${n} live allocations`);
  if (live.length !== tickets.allocated + tickets.held) fail(`${live.length} live allocations but ${tickets.allocated + tickets.held} tickets allocated or held`);
  if (tickets.allocated + tickets.held + tickets.returned + tickets.available + tickets.void + tickets.allotted !== tickets.total) {
    fail('final stats: allocated + held + returned + available + void + allotted != total');
  }
  const counters = await counterTotals(sql, campaignId);
  if (counters.total !== tickets.total || counters.allocated !== tickets.allocated || counters.held !== tickets.held || counters.void !== tickets.void) {
    fail(`stats counters drifted: ${JSON.stringify(counters)} against tickets ${JSON.stringify(tickets)}`);
  }
  // verifyCampaign (issue 19): every counter and invariant it checks, with 0 drifts.
  for (const d of await verifyCampaign(sql, campaignId)) fail(`verify: ${d.check}${d.subject ? ` ${d.subject}` : ''}: expected ${d.expected}, found ${d.found} (off by ${d.size})`);

  // Every acknowledged allocation is stored, under its key, with the ticket it was answered with;
  // the same key always answered the same allocation.
  const byKey = new Map(allocations.map((a) => [a.idempotency_key as string, a]));
  const keys = new Set<string>();
  let okKeys = 0;
  let unknownKeys = 0;
  for (const inv of history.invocations) {
    const key = inv.request.idempotencyKey;
    keys.add(key);
    const oks = inv.attempts.map((a) => a.outcome).filter((o): o is Extract<Outcome, { kind: 'ok' }> => o.kind === 'ok');
    const firstPass = inv.attempts.filter((a) => !a.retry).map((a) => a.outcome);
    if (firstPass.some((o) => o.kind === 'ok')) okKeys += 1;
    else if (firstPass.some((o) => o.kind === 'unknown')) unknownKeys += 1;
    if (new Set(oks.map((o) => o.allocationId)).size > 1) fail(`key ${key} answered ${new Set(oks.map((o) => o.allocationId)).size} different allocations`);
    const stored = byKey.get(key);
    for (const ok of oks) {
      if (!stored) fail(`key ${key}: acknowledged allocation ${ok.allocationId} is not stored`);
      else if (stored.id !== ok.allocationId || stored.code !== ok.ticketCode) fail(`key ${key}: answered ${ok.ticketCode}, stored ${stored.code}`);
    }
    const last = History.last(inv);
    if (!last || last.kind === 'unknown') fail(`key ${key} was never answered (last: ${last ? last.reason : 'no attempt'})`);
    if (last?.kind === 'refused' && stored) fail(`key ${key}: finally refused ${last.code} but an allocation is stored`);
  }
  // Every stored allocation belongs to an attempted request; ok <= stored <= ok + unknown.
  for (const a of allocations) if (!keys.has(a.idempotency_key)) fail(`stored allocation ${a.id} belongs to no request (key ${a.idempotency_key})`);
  if (allocations.length < okKeys || allocations.length > okKeys + unknownKeys) {
    fail(`stored ${allocations.length} allocations; first pass had ${okKeys} ok and ${unknownKeys} unknown`);
  }
  // After the retries every stored allocation was answered to its client: every ticket accounted for.
  const answered = history.invocations.filter((inv) => History.last(inv)?.kind === 'ok').length;
  if (answered !== allocations.length) fail(`after retries ${answered} keys hold a ticket but ${allocations.length} allocations are stored`);

  // Stats: consistent at every read, and fill never goes backwards (the scenarios release nothing).
  let previous = -1;
  for (const s of [...history.statsReads].sort((x, y) => x.at - y.at)) {
    if (s.allocated + s.held + s.allotted + s.available + s.void !== s.total) {
      fail(`stats read at ${s.at}: ${s.allocated}+${s.held}+${s.allotted}+${s.available}+${s.void} != ${s.total}`);
    }
    if (s.allocated < previous) fail(`stats read at ${s.at}: allocated went back from ${previous} to ${s.allocated}`);
    previous = Math.max(previous, s.allocated);
  }

  // No SOLD_OUT while the final state still has available tickets (no under-allocation).
  const soldOut = history.invocations.filter((inv) => inv.attempts.some((a) => a.outcome.kind === 'refused' && a.outcome.code === 'SOLD_OUT')).length;
  if (soldOut > 0 && tickets.available > 0) fail(`${soldOut} claims answered SOLD_OUT but ${tickets.available} tickets are still available`);

  // Nothing allocated after closeCampaign was acknowledged.
  if (history.closeAck && allocations.length !== history.closeAck.storedAtAck) {
    fail(`${allocations.length - history.closeAck.storedAtAck} allocations stored after closeCampaign was acknowledged`);
  }

  return { violations, final: { ...tickets, stored: allocations.length } };
}

/**
 * Sessions left idle in a transaction by the server (there must be none): idle for more than a
 * second. The webhook dispatcher's transactions (drain, lease) are idle between their statements
 * for a moment, every 250 ms; a transaction left open stays idle.
 */
export async function idleInTransaction(sql: Pool, database: string): Promise<number> {
  const { rows } = await sql.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = $1 AND application_name = 'tessera' AND state LIKE 'idle in transaction%'
        AND now() - state_change > interval '1 second'`,
    [database],
  );
  return rows[0].n;
}
