// The verdict's thresholds, and why; the trend checks over the windows after warm-up, and the note
// on how busy the machine was.
import os from 'node:os';
import { mean, slope } from './numbers';
import { WARMUP_S, WINDOW_S } from './settings';
import type { Row } from './windows';

// The post-warm-up windows are split in thirds (first, middle, last; the first takes the remainder).
// A trend is the last third against each earlier third (a fall can happen early or late), and the
// least-squares slope over all of them.

/**
 * RSS: fails when it grows faster than 5 MB/min after warm-up (least-squares slope of each window's
 * peak RSS, the highest of its samples taken every second) AND has not levelled off: from the
 * middle third to the last it still grows faster than half that. 5 MB/min is 7 GB a day — a leak
 * that ends a process within hours; slower slopes cannot be told from V8's garbage-collection
 * sawtooth in a few minutes. The peak, not the mean: a window's mean falls by 20–50 MB when a major
 * collection lands in it (measured here: post-warm-up slopes of the means from −8.5 to +4.4 MB/min
 * over flat runs), while the high-water mark V8 grows to before collecting holds still (±5 MB) once
 * the heap has reached its working set — and a leak raises it all the same. A heap that grows to
 * its working set and stops passes.
 */
export const RSS_SLOPE_MB_PER_MIN = 5;
export const RSS_LATE_MB_PER_MIN = RSS_SLOPE_MB_PER_MIN / 2;
/**
 * Throughput: fails when the last third's requests/s fall below 0.75 of an earlier third's, unless
 * other processes took the CPU: the ratio is also taken per core left to the soak (load generator,
 * server, and the soak database's backends share the machine with whatever else runs), and both must
 * fall below 0.75. 0.75 because whole bench runs on this machine differ by up to ~25%
 * (docs/BENCHMARKS.md); a steadier drop within one run is a trend.
 */
export const THROUGHPUT_MIN_RATIO = 0.75;
/**
 * p99: fails when the last third's mean p99 exceeds 1.5× an earlier third's, with a positive
 * least-squares slope, and still exceeds 1.5× once scaled by the CPU left to the soak (with a fixed
 * number of connections, latency is inversely proportional to the rate the machine can serve).
 * 1.5× because single 20 s windows of the 2026-11-30 reference run spread over 92–156 ms (1.7×) with
 * no trend; the mean of a third is steadier than one window.
 */
export const P99_MAX_RATIO = 1.5;
/**
 * Cost per request: fails when the CPU a request takes in the server, or in the soak database's
 * PostgreSQL backends, is more than 1.5× in the last third what it was in an earlier third. A
 * request costs what it costs: it should not cost more because the service has run longer (a plan
 * gone stale, an index scanned end to end, a structure that grows). 1.5× leaves room for the
 * window-to-window spread (±20% for the server here) and for other processes sharing the cores'
 * caches. Shown per window in the table.
 */
export const COST_MAX_RATIO = 1.5;
/**
 * Answers other than a ticket or a read: INTERNAL_SERVER_ERROR, a lost connection or a timeout fail
 * at once; SOLD_OUT/ALL_HELD too (see ASSUMED_MAX_RPS). HOLD_EXPIRED is an expected refusal (a
 * confirmation racing its hold's end). Everything else (UNAVAILABLE, RATE_LIMITED…) is counted and
 * fails past 0.1% of requests: the server sheds load that way, but not steadily at this load.
 */
export const EXPECTED_REFUSALS = new Set(['HOLD_EXPIRED']);
export const FATAL_CODES = new Set(['INTERNAL_SERVER_ERROR', 'SOLD_OUT', 'ALL_HELD']);
export const MAX_ERROR_SHARE = 0.001;
/** The machine counts as busy when others used this much CPU on average, or load exceeded 2× cores. */
export const BUSY_OTHER_CORES = 0.25;

export interface Check {
  what: string;
  figures: string;
  pass: boolean;
}

export function trendChecks(rows: Row[]): { checks: Check[]; note: string } {
  const measured = rows.filter((r) => !r.warmup);
  const n = measured.length;
  const third = Math.floor(n / 3);
  if (third < 2) {
    return { checks: [], note: `no trend verdict: ${n} windows after the ${WARMUP_S} s warm-up, at least 6 are needed` };
  }
  const first = measured.slice(0, n - 2 * third);
  const middle = measured.slice(n - 2 * third, n - third);
  const last = measured.slice(n - third);
  const minutes = measured.map((r) => r.endS / 60);
  const cores = os.cpus().length;
  const capacity = (rs: Row[]) => mean(rs.map((r) => Math.max(0.1, cores - r.otherCores)));
  const perRequest = (rs: Row[], part: 'server' | 'database') => mean(rs.map((r) => ((r.cpu?.[part] ?? NaN) * 1000) / r.rps));
  const span = (rs: Row[]) => `${rs[0]!.index}–${rs.at(-1)!.index}`;
  /** The last third against an earlier one. */
  const against = (earlier: Row[], name: string) => ({
    name,
    cpuLeft: capacity(last) / capacity(earlier),
    rps: mean(last.map((r) => r.rps)) / mean(earlier.map((r) => r.rps)),
    p99: mean(last.map((r) => r.p99)) / mean(earlier.map((r) => r.p99)),
    server: perRequest(last, 'server') / perRequest(earlier, 'server'),
    database: perRequest(last, 'database') / perRequest(earlier, 'database'),
  });
  const earlier = [against(first, 'first'), against(middle, 'middle')];

  const rssSlope = slope(minutes, measured.map((r) => r.rssMaxMb));
  const rssLate = (mean(last.map((r) => r.rssMaxMb)) - mean(middle.map((r) => r.rssMaxMb))) / ((third * WINDOW_S) / 60);
  const p99Slope = slope(minutes, measured.map((r) => r.p99));
  const sign = (v: number) => `${v >= 0 ? '+' : '−'}${Math.abs(v).toFixed(1)}`;
  const x = (r: number) => (Number.isFinite(r) ? `${r.toFixed(2)}×` : 'n/a');
  return {
    note:
      `${n} windows after the ${WARMUP_S} s warm-up: first third = windows ${span(first)}, middle = ${span(middle)}, last = ${span(last)}; ` +
      `CPU left to the soak, last ÷ first third ${x(earlier[0]!.cpuLeft)}, last ÷ middle ${x(earlier[1]!.cpuLeft)}`,
    checks: [
      {
        what: 'RSS trend',
        figures: `peak RSS per window: slope ${sign(rssSlope)} MB/min after warm-up (bound ${RSS_SLOPE_MB_PER_MIN}), middle → last third ${sign(rssLate)} MB/min (bound ${RSS_LATE_MB_PER_MIN})`,
        pass: !(rssSlope > RSS_SLOPE_MB_PER_MIN && rssLate > RSS_LATE_MB_PER_MIN),
      },
      {
        what: 'throughput trend',
        figures: `${earlier.map((e) => `last ÷ ${e.name} third ${x(e.rps)} (per core left to the soak ${x(e.rps / e.cpuLeft)})`).join(', ')} (bound ${THROUGHPUT_MIN_RATIO}×)`,
        pass: earlier.every((e) => !(e.rps < THROUGHPUT_MIN_RATIO && e.rps / e.cpuLeft < THROUGHPUT_MIN_RATIO)),
      },
      {
        what: 'p99 trend',
        figures: `${earlier.map((e) => `last ÷ ${e.name} third ${x(e.p99)} (scaled by CPU left ${x(e.p99 * e.cpuLeft)})`).join(', ')} (bound ${P99_MAX_RATIO}×), slope ${sign(p99Slope)} ms/min`,
        pass: earlier.every((e) => !(e.p99 > P99_MAX_RATIO && e.p99 * e.cpuLeft > P99_MAX_RATIO && p99Slope > 0)),
      },
      {
        what: 'cost per request',
        figures: `CPU per request, last ÷ first and ÷ middle third: server ${earlier.map((e) => x(e.server)).join(', ')}; PostgreSQL ${earlier.map((e) => x(e.database)).join(', ')} (bound ${COST_MAX_RATIO}×)`,
        // NaN (no figure: PostgreSQL on another machine) passes.
        pass: earlier.every((e) => !(e.server > COST_MAX_RATIO) && !(e.database > COST_MAX_RATIO)),
      },
    ],
  };
}

export function machineNote(rows: Row[]): string {
  const cores = os.cpus().length;
  const loads = rows.map((r) => r.load1).filter(Number.isFinite);
  const others = rows.map((r) => r.otherCores).filter(Number.isFinite);
  const busy = mean(others) > BUSY_OTHER_CORES || Math.max(...loads) > 2 * cores;
  const figures = `1-minute load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} on ${cores} cores; other processes used ${mean(others).toFixed(2)} cores on average, at most ${Math.max(...others).toFixed(2)}`;
  return busy
    ? `The machine was shared during this run: ${figures}. The figures are lower than on an idle machine; the trend checks scale by the CPU left to the soak.`
    : `The machine was otherwise quiet: ${figures}.`;
}
