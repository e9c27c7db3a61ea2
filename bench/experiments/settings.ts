// The sizes and durations of `npm run bench`, full or `--quick` (shorter runs, smaller pools).
export const quick = process.argv.includes('--quick');
/** Seconds of each measured run. */
export const SECONDS = quick ? 2 : 5;
/** Claims per run of a fill step, and runs per step: 0.1% of the pool a run, 0.3% of it a step (30% of what is left at 99%). */
export const FILL_CLAIMS = quick ? 100 : 1_000;
export const FILL_RUNS = 3;
/** Load on a ceiling server of its own before it is measured: a cold Node process answers at a fraction of its speed while V8 compiles. */
export const WARMUP_SECONDS = quick ? 1 : 2;
/** Tickets of the campaign the loads make and the fill steps and reads use. */
export const BIG = quick ? 100_000 : 1_000_000;
export const CONNECTIONS = [1, 16, 64];
/** The floor and the statement alone are measured at these client counts. */
export const SQL_CLIENTS = [16, 64] as const;
/** Rows of the floor's bare table, and tickets of the statement's campaign: more than a run can claim. */
export const SQL_ROWS = quick ? 100_000 : 300_000;
export const SPREAD_CAMPAIGNS = 64;
/** Tickets of the hot campaign the claim experiments share, and of each of its 64 spread ones. */
export const POOL_TICKETS = quick ? 100_000 : 400_000;
export const SPREAD_TICKETS = quick ? 1_000 : 3_000;
/** The cost runs: requests offered per second, well under saturation, for this long. */
export const COST_RATE = quick ? 200 : 500;
export const COST_SECONDS = quick ? 3 : 15;
/** Tickets of the campaigns claimed right after their load: the hot one, and each of 64 spread ones. */
export const FRESH_TICKETS = quick ? 50_000 : 200_000;
export const FRESH_SPREAD_TICKETS = quick ? 500 : 1_000;
/** The history of writeHistory: allocations of closed campaigns, over this many campaigns. */
export const HISTORY_ALLOCATIONS = quick ? 200_000 : 10_000_000;
export const HISTORY_CAMPAIGNS = 100;
export const BALLOT_ENTRIES = quick ? 100_000 : 1_000_000;
export const BALLOT_TICKETS = quick ? 10_000 : 100_000;
/** The synchronous-commit runs' connections. */
export const SYNC_CONNECTIONS = [1, 64];
