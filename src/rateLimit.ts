// Rate limits per API key (rate-limiter-flexible): a sustained rate in points per second, plus a
// burst allowance — BurstyRateLimiter spends from a second, slower bucket (burstPoints per 10 s)
// once the per-second one is empty, which behaves like a token bucket with room for bursts.
// Operations cost points by what they do (operationCost). In memory by default; with REDIS_URL
// every instance counts in Redis, so several instances enforce one limit — and if Redis stops
// answering, each instance falls back to counting in its own memory (insuranceLimiter) rather than
// refusing or waving everything through. The workers of one WEB_CONCURRENCY cluster without Redis
// share their buckets through the primary process (RateLimiterCluster), so a cluster enforces one
// limit, not one per worker.
//
// The burst allowance follows the key's own rate: a partner limited to r points per second gets
// burstPoints × r / pointsPerSecond burst points per 10 s (the default ratio, scaled), so lowering
// its rate lowers what it can spend in a burst too.
//
// Failed authentications are limited per client address too (a key cannot be guessed at speed).
// A key that costs a database look-up is counted before the look-up and given back when it proves
// valid, so a burst of guesses costs about as many look-ups as the limit allows; over the limit,
// only keys that need no guess get in (admission.ts).
import type Redis from 'ioredis';
import { BurstyRateLimiter, RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

/** Points per root field of an operation; anything not listed costs 1. */
export const OPERATION_COSTS: Readonly<Record<string, number>> = {
  claimTicket: 5,
  holdTicket: 5,
  claimTickets: 5,
  confirmHold: 3,
  extendHold: 3,
  releaseAllocation: 3,
  joinWaitlist: 5,
  leaveWaitlist: 3,
  enterBallot: 5,
  withdrawBallotEntry: 3,
};

export interface RateLimits {
  /** Spends `cost` points of the key's budget; answers how long to wait when there are not enough. */
  consume(partnerId: string, cost: number, pointsPerSecond: number | null): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }>;
  /**
   * Counts a failed authentication from `address` — or reserves one, before a key is looked up.
   * 0 while the address is within its limit; otherwise the seconds until it is again.
   */
  failedAuthentication(address: string): Promise<number>;
  /** Gives back a reserved failure: the key proved valid. */
  refundFailedAuthentication(address: string): Promise<void>;
  /** Seconds to wait when `address` is over its failed-authentication limit; 0 when it is not. */
  authBlockedFor(address: string): Promise<number>;
}

export function createRateLimits(options: {
  pointsPerSecond: number;
  burstPoints: number;
  authFailuresPerMinute: number;
  redis?: Redis;
  /** A cluster worker without Redis: the buckets live in the primary (RateLimiterClusterMaster). */
  throughPrimary?: boolean;
}): RateLimits {
  const make = (keyPrefix: string, points: number, duration: number): RateLimiterAbstract => {
    if (!options.redis && options.throughPrimary) return new RateLimiterCluster({ keyPrefix, points, duration, timeoutMs: 2000 });
    const memory = new RateLimiterMemory({ keyPrefix, points, duration });
    if (!options.redis) return memory;
    return new RateLimiterRedis({ storeClient: options.redis, keyPrefix: `tessera:${keyPrefix}`, points, duration, insuranceLimiter: memory });
  };
  const byRate = new Map<number, RateLimiterAbstract | BurstyRateLimiter>();
  const limiterFor = (rate: number) => {
    let limiter = byRate.get(rate);
    if (!limiter) {
      const base = make(`rate:${rate}`, rate, 1);
      const burst = Math.ceil((options.burstPoints * rate) / options.pointsPerSecond);
      limiter = burst > 0 ? new BurstyRateLimiter(base, make(`burst:${rate}`, burst, 10)) : base;
      byRate.set(rate, limiter);
    }
    return limiter;
  };
  const authFailures = make('auth-failures', options.authFailuresPerMinute, 60);

  return {
    async consume(partnerId, cost, pointsPerSecond) {
      const rate = pointsPerSecond ?? options.pointsPerSecond;
      try {
        await limiterFor(rate).consume(partnerId, cost);
        return { allowed: true };
      } catch (error) {
        if (!(error instanceof RateLimiterRes)) throw error;
        return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(error.msBeforeNext / 1000)) };
      }
    },
    async authBlockedFor(address) {
      const state = await authFailures.get(address);
      if (!state || state.consumedPoints <= options.authFailuresPerMinute) return 0;
      return Math.max(1, Math.ceil(state.msBeforeNext / 1000));
    },
    async failedAuthentication(address) {
      try {
        await authFailures.consume(address, 1);
        return 0;
      } catch (error) {
        if (!(error instanceof RateLimiterRes)) throw error;
        return Math.max(1, Math.ceil(error.msBeforeNext / 1000));
      }
    },
    async refundFailedAuthentication(address) {
      await authFailures.reward(address, 1);
    },
  };
}
