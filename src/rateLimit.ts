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
// One operation is charged to one bucket whole: the per-second one, or, when that cannot take it,
// the burst one — BurstyRateLimiter never splits a charge between them. So the most a key can be
// charged at once — its allowance — is the larger of its rate and its burst, not their sum (rate 1,
// burst 5: 5 points pass, 6 never do). An operation charged more than that could never run, however
// long it waited: it is refused as such (COST_EXCEEDS_ALLOWANCE), without spending anything.
//
// Failed authentications are limited per client address too (a key cannot be guessed at speed),
// counted by its canonical form — an IPv6 client by its network (clientAddress.ts's addressKey).
// A key that costs a database look-up is counted before the look-up and given back when it proves
// valid, so a burst of guesses costs about as many look-ups as the limit allows; over the limit,
// only keys that need no guess get in (admission.ts).
import type Redis from 'ioredis';
import { BurstyRateLimiter, RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { addressKey, DEFAULT_IPV6_PREFIX } from './clientAddress';
import { DEFAULT_REDIS_KEY_PREFIX } from './redisKeys';

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

/** What a key whose rate is `rate` points per second may spend: the buckets the limiter makes for it. */
export interface KeyBudget {
  /** Points per second (the per-second bucket). */
  readonly rate: number;
  /** Points per 10 s once the per-second bucket is empty; 0: no burst bucket. */
  readonly burst: number;
  /** The most one operation can be charged: the larger bucket (a charge is never split). */
  readonly allowance: number;
}

/** The budget of a key limited to `rate` points per second, under the server's defaults. */
export function keyBudget(defaults: { pointsPerSecond: number; burstPoints: number }, rate: number): KeyBudget {
  const burst = Math.ceil((defaults.burstPoints * rate) / defaults.pointsPerSecond);
  return { rate, burst, allowance: Math.max(rate, burst) };
}

export type Charge =
  | { allowed: true }
  | { allowed: false; retryAfterSeconds: number }
  /** The cost is over the key's whole allowance: no wait will let it through. Nothing was spent. */
  | { allowed: false; allowance: number };

export interface RateLimits {
  /** Spends `cost` points of the key's budget; answers how long to wait when there are not enough, or that no wait will do. */
  consume(partnerId: string, cost: number, pointsPerSecond: number | null): Promise<Charge>;
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
  /** Prefix length an IPv6 client's failures are counted by (AUTH_FAILURE_IPV6_PREFIX); 64 when left out. */
  authFailureIpv6Prefix?: number;
  redis?: Redis;
  /** What every key in Redis begins with (REDIS_KEY_PREFIX, redisKeys.ts). */
  redisKeyPrefix?: string;
  /** A cluster worker without Redis: the buckets live in the primary (RateLimiterClusterMaster). */
  throughPrimary?: boolean;
}): RateLimits {
  const make = (keyPrefix: string, points: number, duration: number): RateLimiterAbstract => {
    if (!options.redis && options.throughPrimary) return new RateLimiterCluster({ keyPrefix, points, duration, timeoutMs: 2000 });
    const memory = new RateLimiterMemory({ keyPrefix, points, duration });
    if (!options.redis) return memory;
    const redisKeyPrefix = `${options.redisKeyPrefix ?? DEFAULT_REDIS_KEY_PREFIX}${keyPrefix}`;
    return new RateLimiterRedis({ storeClient: options.redis, keyPrefix: redisKeyPrefix, points, duration, insuranceLimiter: memory });
  };
  const byRate = new Map<number, { budget: KeyBudget; limiter: RateLimiterAbstract | BurstyRateLimiter }>();
  const bucketsFor = (rate: number) => {
    let buckets = byRate.get(rate);
    if (!buckets) {
      const budget = keyBudget(options, rate);
      const base = make(`rate:${rate}`, rate, 1);
      const limiter = budget.burst > 0 ? new BurstyRateLimiter(base, make(`burst:${rate}`, budget.burst, 10)) : base;
      byRate.set(rate, (buckets = { budget, limiter }));
    }
    return buckets;
  };
  const authFailures = make('auth-failures', options.authFailuresPerMinute, 60);
  const clientKey = (address: string) => addressKey(address, options.authFailureIpv6Prefix ?? DEFAULT_IPV6_PREFIX);

  return {
    async consume(partnerId, cost, pointsPerSecond) {
      const { budget, limiter } = bucketsFor(pointsPerSecond ?? options.pointsPerSecond);
      if (cost > budget.allowance) return { allowed: false, allowance: budget.allowance };
      try {
        await limiter.consume(partnerId, cost);
        return { allowed: true };
      } catch (error) {
        if (!(error instanceof RateLimiterRes)) throw error;
        return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(error.msBeforeNext / 1000)) };
      }
    },
    async authBlockedFor(address) {
      const state = await authFailures.get(clientKey(address));
      if (!state || state.consumedPoints <= options.authFailuresPerMinute) return 0;
      return Math.max(1, Math.ceil(state.msBeforeNext / 1000));
    },
    async failedAuthentication(address) {
      try {
        await authFailures.consume(clientKey(address), 1);
        return 0;
      } catch (error) {
        if (!(error instanceof RateLimiterRes)) throw error;
        return Math.max(1, Math.ceil(error.msBeforeNext / 1000));
      }
    },
    async refundFailedAuthentication(address) {
      await authFailures.reward(clientKey(address), 1);
    },
  };
}
