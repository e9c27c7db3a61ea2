// Every key and channel Tessera uses in Redis begins with the deployment's prefix
// (src/redisKeys.ts): REDIS_KEY_PREFIX, else `tessera:<database name>:`. Two deployments on one
// Redis keep their own counts and signals; the instances of one deployment share theirs.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type Redis from 'ioredis';
import { loadConfig } from '../src/config';
import { redisKeyPrefixFor } from '../src/redisKeys';
import { connectTestRedis, REDIS_URL } from './helpers/redis';
import { ADMIN_KEY, createTestDatabase, startTestServer, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';
import { postFrom } from './helpers/ws';
import { tempDir } from './helpers/tempDirs';

const LIMIT = 3;
const RATE_LIMIT = { pointsPerSecond: 20_000, burstPoints: 100_000, authFailuresPerMinute: LIMIT };
const wrongKey = () => `tsp_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;

describe('the default prefix', () => {
  test('is tessera:<database name>: for the URL the server connects with', () => {
    expect(redisKeyPrefixFor('postgresql://app@db.internal:5432/tickets_eu')).toBe('tessera:tickets_eu:');
    expect(redisKeyPrefixFor('postgresql://app@db-a:5432,db-b:5432/tickets_us?target_session_attrs=read-write')).toBe('tessera:tickets_us:');
    expect(redisKeyPrefixFor('postgresql:///local?host=/var/run/postgresql')).toBe('tessera:local:');
  });

  test("without a database in the URL, the user's name (libpq's default database)", () => {
    expect(redisKeyPrefixFor('postgres://alice@db.internal')).toBe('tessera:alice:');
  });

  test('a database name with a colon cannot read as another prefix', () => {
    expect(redisKeyPrefixFor('postgres://db/a%3Ab')).toBe('tessera:a%3Ab:');
  });
});

describe('REDIS_KEY_PREFIX', () => {
  const base = { NODE_ENV: 'test', ADMIN_API_KEY: ADMIN_KEY, DATABASE_URL: 'postgresql://localhost/tessera', EMBEDDED_PG_DIR: path.join(tempDir('tessera-config-'), 'pgdata') };
  test('is taken as written; unset, it is left to the server (the database name)', () => {
    expect(loadConfig({ ...base, REDIS_KEY_PREFIX: 'tessera:prod-eu:' }).redisKeyPrefix).toBe('tessera:prod-eu:');
    expect(loadConfig(base).redisKeyPrefix).toBeUndefined();
    expect(loadConfig({ ...base, REDIS_KEY_PREFIX: '' }).redisKeyPrefix).toBeUndefined();
  });

  test.each(['with space:', 'tab\t', 'x'.repeat(101), 'ünïcode:'])('refuses %j, naming the variable', (value) => {
    expect(() => loadConfig({ ...base, REDIS_KEY_PREFIX: value })).toThrow(/REDIS_KEY_PREFIX must be 1 to 100 printable ASCII characters/);
  });
});

describe('deployments sharing one Redis', () => {
  let redis: Redis | null;
  const servers: TestServer[] = [];
  /** A prefix no other run of this file has used (Redis keeps counts for a minute). */
  const run = randomBytes(4).toString('hex');
  const start = async (options: Parameters<typeof startTestServer>[0]) => {
    const server = await startTestServer({ redis: redis!, ...options });
    servers.push(server);
    return server;
  };
  const skipped = () => {
    if (redis) return false;
    console.warn(`Redis at ${REDIS_URL} is not reachable: the Redis key prefix tests are skipped (Tessera then counts in memory).`);
    return true;
  };

  beforeAll(async () => {
    redis = await connectTestRedis();
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    redis?.disconnect();
  });

  test('two servers with different REDIS_KEY_PREFIX keep separate failed-authentication counts', async () => {
    if (skipped()) return;
    const database = await createTestDatabase();
    try {
      const a = await start({ databaseUrl: database.url, config: { env: 'production', rateLimit: RATE_LIMIT, redisKeyPrefix: `tessera-test:${run}:a:` } });
      const b = await start({ databaseUrl: database.url, config: { env: 'production', rateLimit: RATE_LIMIT, redisKeyPrefix: `tessera-test:${run}:b:` } });
      const sameAsA = await start({ databaseUrl: database.url, config: { env: 'production', rateLimit: RATE_LIMIT, redisKeyPrefix: `tessera-test:${run}:a:` } });
      for (let i = 0; i < LIMIT; i += 1) expect((await postFrom(a.url, '127.0.0.71', wrongKey(), '{ __typename }')).status).toBe(401);
      expect((await postFrom(a.url, '127.0.0.71', wrongKey(), '{ __typename }')).status).toBe(429);
      // The other deployment has its own count; an instance of the same deployment shares A's.
      expect((await postFrom(b.url, '127.0.0.71', wrongKey(), '{ __typename }')).status).toBe(401);
      expect((await postFrom(sameAsA.url, '127.0.0.71', wrongKey(), '{ __typename }')).status).toBe(429);
      // The count is in Redis, under A's prefix and the client's canonical address.
      expect(await redis!.exists(`tessera-test:${run}:a:auth-failures:127.0.0.71`)).toBe(1);
      expect(await redis!.exists(`tessera-test:${run}:b:auth-failures:127.0.0.71`)).toBe(1);
      expect(await redis!.exists('tessera:auth-failures:127.0.0.71')).toBe(0);
    } finally {
      await Promise.all(servers.splice(0).map((s) => s.stop()));
      await database.drop();
    }
  });

  test('unset, servers on different databases keep separate counts; the rate limits are under the prefix too', async () => {
    if (skipped()) return;
    const a = await start({ config: { env: 'production', rateLimit: RATE_LIMIT } });
    const b = await start({ config: { env: 'production', rateLimit: RATE_LIMIT } });
    for (let i = 0; i < LIMIT; i += 1) expect((await postFrom(a.url, '127.0.0.72', wrongKey(), '{ __typename }')).status).toBe(401);
    expect((await postFrom(a.url, '127.0.0.72', wrongKey(), '{ __typename }')).status).toBe(429);
    expect((await postFrom(b.url, '127.0.0.72', wrongKey(), '{ __typename }')).status).toBe(401);
    const prefix = redisKeyPrefixFor(a.databaseUrl);
    expect(prefix).toMatch(/^tessera:tessera_test_\w+:$/);
    expect(await redis!.exists(`${prefix}auth-failures:127.0.0.72`)).toBe(1);
    const partner = await a.createPartner();
    expect((await a.gql(partner.apiKey, '{ __typename }')).status).toBe(200);
    expect(await redis!.exists(`${prefix}rate:20000:${partner.id}`)).toBe(1);
  });

  test('live signals go out on the prefixed channels, not on a shared one', async () => {
    if (skipped()) return;
    const prefix = `tessera-test:${run}:live:`;
    const server = await start({ config: { env: 'production', redisKeyPrefix: prefix } });
    const listener = redis!.duplicate({ enableOfflineQueue: true });
    const heard: string[] = [];
    listener.on('pmessage', (_pattern: string, channel: string) => heard.push(channel));
    try {
      await listener.psubscribe(`${prefix}*`, 'tessera:campaign-changed', 'tessera:partner-key-changed');
      const campaignId = await server.openCampaignWith(1);
      const partner = await server.createPartner();
      await server.gql(ADMIN_KEY, 'mutation($p: ID!) { rotateApiKey(partnerId: $p) { apiKey } }', { p: partner.id });
      await until(() => heard.includes(`${prefix}campaign-changed`) && heard.includes(`${prefix}partner-key-changed`), { message: `signals on ${prefix}…` });
      expect(campaignId).toEqual(expect.any(String));
      expect(heard.filter((channel) => !channel.startsWith(prefix))).toEqual([]);
    } finally {
      listener.disconnect();
    }
  });
});
