// What an experiment of `npm run bench` records: rows (a measurement and its figures, printed as
// they come) and bars (a figure against its target, PASS or MISS). A MISS is a measurement, not a
// failure of the bench; failures are lost or duplicated tickets and runs that answered errors.
import type { LoadResult } from '../harness';
import type { SqlClaimResult } from '../sqlClaims';

export interface Row {
  what: string;
  value: string;
}

export interface Bar {
  what: string;
  figure: string;
  target: string;
  pass: boolean;
}

export const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
export const ms = (n: number) => `${Math.round(n * 10) / 10} ms`;
export const x = (n: number) => `${n.toFixed(2)}×`;
export const ratio = (a: number, b: number) => x(a / b);
export const signed = (n: number) => `${n >= 0 ? '+' : '−'}${ms(Math.abs(n))}`;
/** CPU seconds as microseconds. */
export const us = (seconds: number) => `${fmt(seconds * 1e6)} µs`;
export type Rate = { rps: number; p50: number; p99: number };
export const perSecond = (r: Rate) => `${fmt(r.rps)}/s  p50 ${ms(r.p50)}  p99 ${ms(r.p99)}`;
export const http = (r: LoadResult): Rate => ({ rps: r.requestsPerSecond, p50: r.p50, p99: r.p99 });
export const sqlRate = (r: SqlClaimResult): Rate => ({ rps: r.claimsPerSecond, p50: r.p50, p99: r.p99 });
export const meanRate = (runs: LoadResult[]) => runs.reduce((sum, r) => sum + r.requestsPerSecond, 0) / runs.length;
/** The mean rate and latencies of several runs. */
export const mean = (runs: LoadResult[]): Rate => ({
  rps: meanRate(runs),
  p50: runs.reduce((n, r) => n + r.p50, 0) / runs.length,
  p99: runs.reduce((n, r) => n + r.p99, 0) / runs.length,
});

/** Seconds since the bench began, for the printed rows. */
const began = performance.now();

export class Report {
  readonly rows: Row[] = [];
  readonly bars: Bar[] = [];
  constructor(readonly experiment: string) {}

  record(what: string, value: string): void {
    this.rows.push({ what, value });
    console.log(`${`[${Math.round((performance.now() - began) / 1000)} s]`.padStart(8)} ${what.padEnd(72)} ${value}`);
  }

  bar(b: Bar): void {
    this.bars.push(b);
  }

  /** A ratio that must be at least `target`. */
  atLeast(what: string, value: number, target: number): void {
    this.bar({ what, figure: x(value), target: `≥ ${x(target)}`, pass: value >= target });
  }

  /** A latency in milliseconds that must be at most `target`. */
  atMost(what: string, value: number, target: number): void {
    this.bar({ what, figure: ms(value), target: `≤ ${target} ms`, pass: value <= target });
  }
}
