// The hold sweeper: every interval, returns expired holds' tickets to the pool (db/expireHolds.ts),
// returns the unused tickets of allotments that lapsed (tessera_lapse_allotments), offers the
// returned tickets of WAITLIST_FIRST campaigns to their waitlists (tessera_offer_all_returned), passes
// drawn ballots' free tickets on to their LOST entries (tessera_pass_on_ballots), folds the stats
// counters of exited backends (tessera_fold_counters), and announces campaigns that sold out or fell
// to their low-stock threshold (tessera_stock_events, webhooks).
// Not needed for correctness under POOL — an expired hold's ticket is claimable, and reads as
// available, from the instant it expires — but it keeps the table true to the clock, so the claim's fast path (the
// AVAILABLE index) finds those tickets too. Under WAITLIST_FIRST it is what passes expired holds,
// expired offers and lapsed allotments on (within one interval). Every instance may run one: SKIP LOCKED keeps them (and
// claims taking over the same holds) out of each other's way.
import type { Database } from './db/client';
import { expireHolds, foldCounters, lapseAllotments, stockEvents } from './db/expireHolds';
import { offerAllReturned } from './db/waitlist';
import { passOnBallots } from './db/ballots';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import type { Reachability } from './reachability';

const BATCH = 1000;

/**
 * One sweep, now, in the order the sweeper runs them; what fails is thrown. Expired holds go in
 * batches of BATCH until fewer are left or `deadline` (a Date.now() instant) has passed. The
 * interval's loop below calls it; tests call it to sweep exactly once, now, instead of waiting for
 * the interval. Returns how many holds it expired.
 */
export async function sweepOnce(db: Database, options: { metrics?: Metrics; deadline?: number } = {}): Promise<number> {
  const { metrics, deadline = Infinity } = options;
  let expired = 0;
  let swept: number;
  do {
    swept = await expireHolds(db.prisma, BATCH);
    expired += swept;
    if (swept > 0) metrics?.holdsExpired.inc(swept);
  } while (swept >= BATCH && Date.now() < deadline);
  await lapseAllotments(db.prisma);
  // WAITLIST_FIRST: what the two above returned, and anything a dead caller left RETURNED.
  await offerAllReturned(db.prisma);
  // BALLOT: tickets no winner holds any more, to LOST entries in rank order.
  await passOnBallots(db.prisma);
  await foldCounters(db.prisma);
  await stockEvents(db.prisma);
  return expired;
}

export function startHoldSweeper(db: Database, logger: Logger, metrics: Metrics, intervalMs: number, reachability: Reachability): { stop(): Promise<void> } {
  if (intervalMs <= 0) return { stop: async () => undefined };
  let running: Promise<void> | null = null;
  const sweep = async () => {
    try {
      // Several batches when many holds lapsed at once, but never longer than one interval.
      await sweepOnce(db, { metrics, deadline: Date.now() + intervalMs });
      reachability.answered();
    } catch (err) {
      if (!reachability.failed(err, 'hold sweeper')) logger.warn({ error: (err as Error).message }, 'hold sweeper: sweep failed; next interval retries');
    }
  };
  const timer = setInterval(() => {
    if (!running) running = sweep().finally(() => (running = null));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
