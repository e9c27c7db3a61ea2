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

export function startHoldSweeper(db: Database, logger: Logger, metrics: Metrics, intervalMs: number, reachability: Reachability): { stop(): Promise<void> } {
  if (intervalMs <= 0) return { stop: async () => undefined };
  let running: Promise<void> | null = null;
  const sweep = async () => {
    try {
      // Several batches when many holds lapsed at once, but never longer than one interval.
      const until = Date.now() + intervalMs;
      let swept: number;
      do {
        swept = await expireHolds(db.prisma, BATCH);
        if (swept > 0) metrics.holdsExpired.inc(swept);
      } while (swept >= BATCH && Date.now() < until);
      await lapseAllotments(db.prisma);
      // WAITLIST_FIRST: what the two above returned, and anything a dead caller left RETURNED.
      await offerAllReturned(db.prisma);
      // BALLOT: tickets no winner holds any more, to LOST entries in rank order.
      await passOnBallots(db.prisma);
      await foldCounters(db.prisma);
      await stockEvents(db.prisma);
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
