// Refused claims per campaign, minute and code (Campaign.timeline's `refused` and `refusals`, the
// console's claims-and-refusals chart). A refusal writes nothing by itself: it is counted in this
// process's memory, and every `flushMs` the counts are added to refusal_counters in one upsert —
// so a sold-out flash crowd costs the database one statement per instance per flush, not one per
// refusal. Counts of the last interval are lost if the process dies before its flush: these are
// figures for a chart, not records (refusals change nothing; allocations are the records).
import type { Database } from '../db/client';

/**
 * Every claim refusal is counted but these two: a campaign that does not exist (or lies outside a
 * scoped key's campaigns) has no timeline, and a request refused before any campaign was looked at
 * says nothing about one.
 */
const NOT_COUNTED: ReadonlySet<string> = new Set(['CAMPAIGN_NOT_FOUND', 'INVALID_INPUT']);

export class RefusalCounter {
  /** `${campaignId} ${minute ISO} ${code}` → count since the last flush. */
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Database,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Counts one refusal of `code` in the campaign now (nothing for codes not counted). */
  count(campaignId: string, code: string): void {
    if (NOT_COUNTED.has(code)) return;
    const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString();
    const key = `${campaignId.toLowerCase()} ${minute} ${code}`;
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
  }

  start(flushMs: number): void {
    this.timer ??= setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  /** Adds what was counted to the table; on failure the counts are kept for the next flush. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const batch = this.pending;
      this.pending = new Map();
      const rows = [...batch].map(([key, n]) => [...key.split(' '), n] as [string, string, string, number]);
      try {
        await this.db.pool.query(
          `INSERT INTO refusal_counters (campaign_id, minute, code, count)
           SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::bigint[])
           ON CONFLICT (campaign_id, minute, code) DO UPDATE SET count = refusal_counters.count + EXCLUDED.count`,
          [0, 1, 2, 3].map((i) => rows.map((r) => r[i])),
        );
      } catch (error) {
        for (const [key, n] of batch) this.pending.set(key, (this.pending.get(key) ?? 0) + n);
        this.onError(error);
      }
    });
    return this.flushing;
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}
