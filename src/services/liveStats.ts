// The campaignStats subscription: the campaign's stats now, then again whenever they change —
// re-read when a change is signalled (live.ts) or every few seconds anyway, pushed at most a few
// times a second, and only when something actually changed.
import { campaignStats } from '../db/campaignStats';
import type { Database } from '../db/client';
import type { LiveUpdates } from '../live';
import type { CampaignStatsModel } from '../models';

export interface LiveStatsOptions {
  /** Least time between two pushes (the throttle): 250 ms = at most 4 updates a second. */
  minIntervalMs: number;
  /** Re-read without a signal after this long. */
  pollMs: number;
}

export const LIVE_STATS_DEFAULTS: LiveStatsOptions = { minIntervalMs: 250, pollMs: 2000 };

export async function* campaignStatsStream(
  db: Database,
  live: LiveUpdates,
  campaignId: string,
  options: LiveStatsOptions = LIVE_STATS_DEFAULTS,
): AsyncGenerator<CampaignStatsModel> {
  let dirty = true;
  let wake: (() => void) | null = null;
  const stop = live.watch(campaignId, () => {
    dirty = true;
    wake?.();
  });
  try {
    let last = '';
    let lastPush = 0;
    for (;;) {
      if (!dirty) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, options.pollMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = null;
      }
      const wait = lastPush + options.minIntervalMs - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      dirty = false;
      const stats = (await campaignStats(db.prisma, [campaignId])).get(campaignId);
      if (!stats) return;
      const snapshot = JSON.stringify(stats);
      if (snapshot !== last) {
        last = snapshot;
        lastPush = Date.now();
        yield stats;
      }
    }
  } finally {
    stop();
  }
}
