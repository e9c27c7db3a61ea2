// What the soak records as it runs: one Window of figures per WINDOW_S seconds, the answers the
// clients were given (checked against the database at the end), and what the run saw go wrong.
import type { CpuShares } from './machine';
import { mb, mean, percentile } from './numbers';
import { WARMUP_S, WINDOW_S, WINDOWS } from './settings';

export interface Window {
  index: number;
  requests: number;
  claims: number;
  latencies: number[];
  claimLatencies: number[];
  codes: Map<string, number>;
  rssSamples: number[];
  // Filled at the window's end.
  heapMb?: number;
  pgServer?: number;
  pgAll?: number;
  /** Checkpoints the PostgreSQL server made during the window (any database's DROP DATABASE forces one). */
  checkpoints?: number;
  /** VACUUM / ANALYZE run at the window's end, standing in for autovacuum (see maintain()). */
  maintenance?: string[];
  load1?: number;
  cpu?: CpuShares;
}
export const windows: Window[] = Array.from({ length: WINDOWS }, (_, index) => ({
  index,
  requests: 0,
  claims: 0,
  latencies: [],
  claimLatencies: [],
  codes: new Map(),
  rssSamples: [],
}));
/** When the first window began (performance.now()); set as the run starts. */
export const clock = { t0: 0 };
export const windowAt = (now: number) => windows[Math.min(WINDOWS - 1, Math.max(0, Math.floor((now - clock.t0) / (WINDOW_S * 1000))))]!;

export const violations: string[] = [];
export const violationCount = { n: 0 };
export function violation(message: string): void {
  violationCount.n += 1;
  if (violations.length < 20) violations.push(message);
}

/** What the client was told about each allocation, and the state that must be stored at the end. */
export type Expect = 'ACTIVE' | 'RELEASED' | 'EXPIRED' | 'ANY';
export const acknowledged = new Map<string, { code: string; campaign: string; expect: Expect }>();
/** Idempotency keys of claims and holds whose outcome the client never learned. */
export const unknownKeys = new Set<string>();
export const loadedPerCampaign = new Map<string, number>();

export interface Row {
  index: number;
  endS: number;
  warmup: boolean;
  rps: number;
  claimsPerS: number;
  p50: number;
  p99: number;
  claimP99: number;
  rssMb: number;
  rssMaxMb: number;
  heapMb: number;
  pgServer: number;
  pgAll: number;
  checkpoints: number;
  maintenance: string[] | undefined;
  load1: number;
  otherCores: number;
  cpu: CpuShares | undefined;
  codes: Map<string, number>;
}

export function rowsOf(): Row[] {
  return windows.map((w) => {
    const lat = [...w.latencies].sort((a, b) => a - b);
    const claimLat = [...w.claimLatencies].sort((a, b) => a - b);
    const endS = (w.index + 1) * WINDOW_S;
    return {
      index: w.index + 1,
      endS,
      warmup: endS <= WARMUP_S,
      rps: w.requests / WINDOW_S,
      claimsPerS: w.claims / WINDOW_S,
      p50: percentile(lat, 0.5),
      p99: percentile(lat, 0.99),
      claimP99: percentile(claimLat, 0.99),
      rssMb: mb(mean(w.rssSamples)),
      rssMaxMb: mb(Math.max(...w.rssSamples)),
      heapMb: w.heapMb ?? NaN,
      pgServer: w.pgServer ?? NaN,
      pgAll: w.pgAll ?? NaN,
      checkpoints: w.checkpoints ?? NaN,
      maintenance: w.maintenance,
      load1: w.load1 ?? NaN,
      otherCores: w.cpu?.others ?? NaN,
      cpu: w.cpu,
      codes: w.codes,
    };
  });
}
