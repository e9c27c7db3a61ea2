// The campaignStats subscription over graphql-ws: an update within a second of a claim, throttled,
// admin only — and, through Redis, across instances.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createClient, type Client } from 'graphql-ws';
import type Redis from 'ioredis';
import WebSocket from 'ws';
import { connectTestRedis, REDIS_URL } from './helpers/redis';
import { ADMIN_KEY, CLAIM, createTestDatabase, startTestServer, type TestServer } from './helpers/testServer';
import { until, type UntilOptions } from './helpers/time';

const LIVE = readFileSync(path.resolve(__dirname, '../contract/ops/live.graphql'), 'utf8');

interface Stats {
  total: number;
  allocated: number;
  held: number;
  available: number;
  fillRate: number;
  soldOutAt: string | null;
}

function connect(server: TestServer, key: string | null): Client {
  return createClient({
    url: server.url.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: key === null ? {} : { Authorization: `Bearer ${key}` },
    retryAttempts: 0,
    lazy: true,
  });
}

/** Subscribes with the contract's operation; collects every update with the time it arrived. */
function watch(client: Client, id: string) {
  const updates: { at: number; stats: Stats }[] = [];
  const errors: unknown[] = [];
  const stop = client.subscribe<{ campaignStats: Stats }>(
    { query: LIVE, variables: { id } },
    {
      next: (value) => {
        if (value.data) updates.push({ at: Date.now(), stats: value.data.campaignStats });
        if (value.errors) errors.push(...value.errors);
      },
      error: (error) => errors.push(error),
      complete: () => undefined,
    },
  );
  return { updates, errors, stop };
}

/** Updates are stamped as they arrive: looking every 20 ms only bounds how long a test waits. */
const LOOK: Omit<UntilOptions, 'message'> = { timeoutMs: 5_000, intervalMs: 20 };

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

test('the admin gets the stats at once, then an update within a second of a claim', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(10);
  const client = connect(server, ADMIN_KEY);
  const live = watch(client, campaignId);
  try {
    await until(() => live.updates.length >= 1, { ...LOOK, message: 'the first stats' });
    expect(live.updates[0]!.stats).toMatchObject({ total: 10, allocated: 0, available: 10, held: 0, fillRate: 0 });
    const claimedAt = Date.now();
    await server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: 'live' } });
    await until(() => live.updates.some((u) => u.stats.allocated === 1), { ...LOOK, message: 'an update with the claim' });
    const update = live.updates.find((u) => u.stats.allocated === 1)!;
    expect(update.at - claimedAt).toBeLessThan(1000);
    expect(update.stats).toMatchObject({ total: 10, allocated: 1, available: 9, fillRate: 0.1 });
    expect(live.errors).toEqual([]);
  } finally {
    live.stop();
    await client.dispose();
  }
});

test('a burst of claims is pushed at most a few times a second, ending on the final figures', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(200);
  const client = connect(server, ADMIN_KEY);
  const live = watch(client, campaignId);
  try {
    await until(() => live.updates.length >= 1, { ...LOOK, message: 'the first stats' });
    const started = Date.now();
    await Promise.all(Array.from({ length: 150 }, (_, i) => server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: `b${i}` } })));
    await until(() => live.updates.at(-1)!.stats.allocated === 150, { ...LOOK, message: 'an update with all 150 claims' });
    const during = live.updates.filter((u) => u.at >= started);
    const seconds = Math.max(0.25, (during.at(-1)!.at - started) / 1000);
    expect(during.length).toBeLessThanOrEqual(Math.ceil(seconds * 4) + 2);
    for (const u of live.updates) expect(u.stats.allocated + u.stats.held + u.stats.available).toBe(u.stats.total);
  } finally {
    live.stop();
    await client.dispose();
  }
});

test('a partner may not subscribe (FORBIDDEN), and a connection without a key is refused', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(1);
  const client = connect(server, partner.apiKey);
  const live = watch(client, campaignId);
  try {
    await until(() => live.errors.length > 0, { ...LOOK, message: "the partner's subscription to be refused" });
    expect(JSON.stringify(live.errors)).toMatch(/FORBIDDEN/);
  } finally {
    live.stop();
    await client.dispose();
  }
  const anonymous = connect(server, null);
  const refused = watch(anonymous, campaignId);
  try {
    await until(() => refused.errors.length > 0, { ...LOOK, message: 'the connection without a key to be refused' });
    expect(refused.updates).toEqual([]);
  } finally {
    refused.stop();
    await anonymous.dispose();
  }
});

describe('across two instances sharing Redis', () => {
  let redis: Redis | null;
  let other: Redis | undefined;
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    redis = await connectTestRedis();
    if (!redis) return;
    const database = await createTestDatabase();
    a = await startTestServer({ redis, databaseUrl: database.url });
    other = redis.duplicate();
    b = await startTestServer({ redis: other, databaseUrl: database.url });
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    redis?.disconnect();
    other?.disconnect();
  });

  test('a claim served by one instance reaches a subscriber on the other within a second', async () => {
    if (!redis) {
      console.warn(`Redis at ${REDIS_URL} is not reachable: the cross-instance subscription test is skipped.`);
      return;
    }
    const partner = await a.createPartner();
    const campaignId = await a.openCampaignWith(5);
    const client = connect(b, ADMIN_KEY);
    const live = watch(client, campaignId);
    try {
      await until(() => live.updates.length >= 1, { ...LOOK, message: 'the first stats' });
      const claimedAt = Date.now();
      await a.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: 'far' } });
      await until(() => live.updates.some((u) => u.stats.allocated === 1), { ...LOOK, message: 'an update with the claim' });
      expect(live.updates.find((u) => u.stats.allocated === 1)!.at - claimedAt).toBeLessThan(1000);
    } finally {
      live.stop();
      await client.dispose();
    }
  });
});
