// The Redis the cross-instance tests share (REDIS_URL, else the local default). Without one they
// are skipped with a warning: Tessera then works per instance.
import Redis from 'ioredis';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A connection to REDIS_URL that answers PING, or null when Redis is not reachable. */
export async function connectTestRedis(): Promise<Redis | null> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 1000 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return redis;
  } catch {
    redis.disconnect();
    return null;
  }
}
