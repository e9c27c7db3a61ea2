// When a failed delivery is tried again. The contract: the first retry within 10 s, then exponential
// backoff with jitter for at least 24 h in all, then FAILED.
//
// Step n (n = 1 for the first retry) is FIRST_RETRY_MS · 2^(n-1), capped at MAX_STEP_MS, and the
// delay is drawn from [step/2, step] ("equal jitter"): receivers that failed together do not come
// back together, and no delay is shorter than half its step. The give-up point counts those
// shortest delays, so even with the least jitter every time the retries span GIVE_UP_AFTER_MS; with
// the most they span at most twice that. Attempts are counted, not timed, so the answer does not
// depend on the clock or on how long each attempt took.

export const FIRST_RETRY_MS = 5_000;
export const BACKOFF_FACTOR = 2;
export const MAX_STEP_MS = 60 * 60 * 1000;
export const GIVE_UP_AFTER_MS = 24 * 60 * 60 * 1000;
/**
 * How long a claimed attempt owns its delivery. It exceeds the 10 s delivery timeout, so a live
 * attempt always ends before its lease does; an attempt cut off by a crash is taken again when the
 * lease ends — at most 20 s after the restart, leaving 10 s of the contract's 30 s for the
 * dispatcher to poll.
 */
export const LEASE_MS = 20_000;

const stepMs = (attempt: number): number => Math.min(MAX_STEP_MS, FIRST_RETRY_MS * BACKOFF_FACTOR ** (attempt - 1));

/** The last retry: the first n whose shortest delays (half a step each) add up to GIVE_UP_AFTER_MS. */
export const MAX_RETRIES = (() => {
  let retries = 0;
  let shortestSpan = 0;
  while (shortestSpan < GIVE_UP_AFTER_MS) {
    retries += 1;
    shortestSpan += stepMs(retries) / 2;
  }
  return retries;
})();

/**
 * The wait before retry number `attempt` (1 = the first retry, after the first attempt failed), or
 * null when the retries are used up and the delivery is FAILED. `random` returns [0, 1).
 */
export function nextAttemptDelayMs(attempt: number, random: () => number = Math.random): number | null {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be an integer from 1 (got ${attempt})`);
  if (attempt > MAX_RETRIES) return null;
  const step = stepMs(attempt);
  return Math.round(step / 2 + (random() * step) / 2);
}
