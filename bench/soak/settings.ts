// The soak's options (`npm run soak -- --minutes 3 --window 20 …`), read once from the command line,
// and the workload they shape.
const KNOWN = new Set(['minutes', 'window', 'connections', 'campaigns', 'tickets', 'warmup', 'no-results', 'keep-db', 'no-maintenance']);
/** The command line as given (the results file quotes it). */
export const args = process.argv.slice(2);
for (const a of args) {
  if (a.startsWith('--') && !KNOWN.has(a.slice(2).split('=')[0]!)) {
    console.error(`soak: unknown option ${a} (known: ${[...KNOWN].map((k) => `--${k}`).join(' ')})`);
    process.exit(2);
  }
}
function option(name: string, fallback: number): number {
  for (let i = 0; i < args.length; i += 1) {
    const a = args[i]!;
    const text = a === `--${name}` ? args[i + 1] : a.startsWith(`--${name}=`) ? a.slice(name.length + 3) : undefined;
    if (text === undefined) continue;
    const value = Number(text);
    if (!Number.isFinite(value) || value <= 0) {
      console.error(`soak: --${name} wants a positive number, not ${JSON.stringify(text)}`);
      process.exit(2);
    }
    return value;
  }
  return fallback;
}
export const WINDOW_S = option('window', 20);
export const WINDOWS = Math.max(1, Math.round((option('minutes', 4) * 60) / WINDOW_S));
export const SECONDS = WINDOWS * WINDOW_S;
export const CONNECTIONS = Math.round(option('connections', 64));
export const CAMPAIGNS = Math.round(option('campaigns', 8));
/**
 * The first windows are warm-up and stay out of the verdict: JIT compilation, the pool's connections
 * opening, caches filling and V8 growing its heap to the working set all happen there.
 */
export const WARMUP_S = option('warmup', 40);
export const WRITE_RESULTS = !args.includes('--no-results');
export const MAINTAIN = !args.includes('--no-maintenance');
export const KEEP_DB = args.includes('--keep-db');

/**
 * The mix, as shares of requests. Claims dominate, as in production; holds are confirmed, released
 * or left to expire (about a fifth lapse, so the sweeper works throughout); releases return tickets;
 * reads are campaign stats (any partner) and the partner's own allocations.
 */
export const MIX = { claim: 0.56, hold: 0.1, confirm: 0.06, release: 0.08, stats: 0.12, read: 0.08 } as const;
export type Op = keyof typeof MIX;
export const OPS = Object.keys(MIX) as Op[];
export const PARTNERS = 4;
/** Holds last 5 s; a worker confirms or releases only holds younger than 3 s, the rest lapse. */
export const HOLD_TTL_S = 5;
export const HOLD_USABLE_MS = 3_000;
/**
 * Pools are loaded once, big enough never to run out (no refill during the run, so the work does
 * not change under the soak): enough for the claims and holds of 2,500 requests/s sustained for the
 * whole run — above the 1,994/s this machine answers for an empty query at 64 connections
 * (docs/BENCHMARKS.md), so beyond anything the soak can reach. A SOLD_OUT or ALL_HELD answer fails
 * the run all the same: the workload would have changed (raise --tickets).
 */
export const ASSUMED_MAX_RPS = 2_500;
export const TICKETS = Math.round(option('tickets', Math.ceil((SECONDS * ASSUMED_MAX_RPS * (MIX.claim + MIX.hold)) / CAMPAIGNS / 10_000) * 10_000));
export const REQUEST_TIMEOUT_MS = 30_000;
export const DATABASE = 'tessera_soak';
export const POOL_SIZE = 10; // the server's DATABASE_POOL_SIZE (its default), set explicitly below
/** /metrics is read with this token, whatever METRICS_TOKEN the environment holds. */
export const METRICS_TOKEN = 'soak-metrics-token-0123456789';
