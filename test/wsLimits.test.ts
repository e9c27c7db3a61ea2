// The WebSocket's own limits (issue 26, High 1 and Medium 4; docs/SECURITY.md "Transports"): the
// size of a message, what a socket may send before its key is accepted, how many subscriptions a
// socket and a key may hold open, and one stats feed per campaign however many watch it.
import { once } from 'node:events';
import http from 'node:http';
import type net from 'node:net';
import WebSocket from 'ws';
import { CampaignFeed } from '../src/services/liveStats';
import { startProcess } from './helpers/process';
import { probeUntil, rssMb, settledRss, warmUp } from './helpers/serverMemory';
import { ADMIN_KEY, CLAIM, createTestDatabase, startTestServer, type TestServer } from './helpers/testServer';
import { sleep, until } from './helpers/time';
import { connectSocket, openSubscription, rawWebSocket, runOverSocket, socketErrors, streamZeros, textFrameHeader, type SocketClient } from './helpers/ws';

const LIVE = 'subscription Live($id: ID!) { campaignStats(id: $id) { total allocated available } }';
const KiB = 1024;
const MiB = 1024 * KiB;

let server: TestServer;
const sockets: SocketClient[] = [];
const socket = (target: TestServer, key: string | null) => {
  const s = connectSocket(target.url, key);
  sockets.push(s);
  return s;
};
const wsUrl = (target: TestServer) => target.url.replace(/^http/, 'ws');

beforeAll(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  await Promise.all(sockets.splice(0).map((s) => s.dispose()));
});
afterAll(() => server.stop());

describe('message sizes', () => {
  /** One attacker connection: a text frame declaring `size` bytes, then that many zeros, as fast as the server reads them. */
  const attack = async (port: number, size: number) => {
    const raw: net.Socket = await rawWebSocket(port);
    raw.write(textFrameHeader(size));
    const sent = await streamZeros(raw, size);
    raw.destroy();
    return sent;
  };

  test('two 95 MB messages sent before any key are refused at their header: memory stays at its baseline and /healthz answers within 100 ms throughout', async () => {
    const database = await createTestDatabase();
    const tessera = await startProcess(database.url);
    const pid = tessera.child.pid!;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      await warmUp(tessera.port, agent);
      const baseline = await settledRss(pid);
      // The same probes for as long without an attack: how fast /healthz is on this machine now.
      const idle = await probeUntil(tessera.port, pid, agent, sleep(2_000));

      const size = 95 * 1000 * 1000;
      const attacked = Promise.all([attack(tessera.port, size), attack(tessera.port, size)]);
      // A little longer, for whatever the server would still do with the bytes it read.
      const during = await probeUntil(tessera.port, pid, agent, attacked.then(() => sleep(1_000)));
      const sent = await attacked;
      const after = rssMb(pid);

      console.info(
        `95 MB × 2 before auth: RSS baseline ${baseline.toFixed(1)} MB, peak ${during.peak.toFixed(1)} MB, after ${after.toFixed(1)} MB; ` +
          `/healthz ${during.answers.length} answers, slowest ${during.slowest.toFixed(1)} ms (${idle.slowest.toFixed(1)} ms without the attack); ` +
          `bytes written before the server closed ${sent.join(', ')}`,
      );
      // The server closed each connection long before its 95 MB were through.
      for (const bytes of sent) expect(bytes).toBeLessThan(size / 10);
      expect(during.peak - baseline).toBeLessThan(20);
      expect(after - baseline).toBeLessThan(20);
      expect(during.answers.length).toBeGreaterThan(10);
      expect(during.answers.filter((a) => a.status !== 200)).toEqual([]);
      // Within 100 ms — or, on a machine already slower than that without the attack (CI beside other
      // test files), within twice its own slowest then: a bound measured in the same run, not hoped.
      // Before the fix the attack stalled it to 215 ms against ~10 ms.
      expect(during.slowest).toBeLessThan(Math.max(100, 2 * idle.slowest));
    } finally {
      agent.destroy();
      tessera.child.kill('SIGKILL');
      await tessera.exited;
      await database.drop();
    }
  });

  test('before its connection_init is accepted a socket may send 16 KiB in all: a 200 KiB connection_init, valid key and all, closes it unanswered', async () => {
    const campaignId = await server.openCampaignWith(1);
    // The same message without the padding is answered: the size is what is refused.
    const small = new WebSocket(wsUrl(server), 'graphql-transport-ws');
    await once(small, 'open');
    small.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${ADMIN_KEY}` } }));
    const [ack] = await once(small, 'message');
    expect(JSON.parse(String(ack))).toEqual({ type: 'connection_ack' });
    small.close();

    const big = new WebSocket(wsUrl(server), 'graphql-transport-ws');
    const received: string[] = [];
    big.on('message', (data) => received.push(String(data)));
    big.on('error', () => undefined);
    await once(big, 'open');
    big.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${ADMIN_KEY}`, padding: 'x'.repeat(200 * KiB) } }));
    big.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: LIVE, variables: { id: campaignId } } }));
    const [code] = (await once(big, 'close')) as [number];
    // Destroyed, not closed politely: no close frame (1006), and nothing was ever answered.
    expect(code).toBe(1006);
    expect(received).toEqual([]);
  });

  test('once its key is accepted, a socket may send messages up to 1 MiB: a 100 KiB subscribe runs', async () => {
    const campaignId = await server.openCampaignWith(3);
    const s = socket(server, ADMIN_KEY);
    const outcome = await runOverSocket(s, { query: LIVE, variables: { id: campaignId, padding: 'x'.repeat(100 * KiB) } });
    expect(socketErrors(outcome)).toEqual([]);
    expect(outcome.results[0]!.data).toEqual({ campaignStats: { total: 3, allocated: 0, available: 3 } });
    expect(s.closed()).toBeUndefined();
  });

  test('a message over 1 MiB from an accepted socket closes it with 1009 (message too big)', async () => {
    const campaignId = await server.openCampaignWith(1);
    const s = socket(server, ADMIN_KEY);
    await runOverSocket(s, { query: LIVE, variables: { id: campaignId } });
    await runOverSocket(s, { query: LIVE, variables: { id: campaignId, padding: 'x'.repeat(2 * MiB) } });
    await until(() => s.closed() !== undefined, { message: 'the socket to close', timeoutMs: 5_000 });
    expect(s.closed()).toBe(1009);
  });
});

describe('subscriptions per socket and per key', () => {
  let capped: TestServer;
  beforeAll(async () => {
    capped = await startTestServer({ config: { websocket: { maxMessageBytes: MiB, maxUnauthenticatedBytes: 16 * KiB, maxSubscriptionsPerSocket: 3, maxSubscriptionsPerKey: 5 } } });
  });
  afterAll(() => capped.stop());

  const viewerKey = async () =>
    (await capped.gql(ADMIN_KEY, 'mutation { createOperatorKey(input: { name: "dashboard", role: VIEWER }) { apiKey } }')).body.data!.createOperatorKey.apiKey as string;

  /** Starts a subscription and waits for its first answer: its stats, or its refusal. */
  const start = async (s: SocketClient, campaignId: string) => {
    const sub = openSubscription(s, { query: LIVE, variables: { id: campaignId } });
    await sub.settled;
    return sub;
  };
  const refusal = (sub: { results: unknown[]; error: () => unknown }) => socketErrors({ results: sub.results as never, error: sub.error() });

  test('a socket holds at most WS_MAX_SUBSCRIPTIONS_PER_SOCKET: one more is refused with LIMIT_REACHED; completing one frees its slot', async () => {
    const key = await viewerKey();
    const campaignId = await capped.openCampaignWith(2);
    const s = socket(capped, key);
    const open = [await start(s, campaignId), await start(s, campaignId), await start(s, campaignId)];
    for (const sub of open) expect(sub.results[0]!.data).toEqual({ campaignStats: { total: 2, allocated: 0, available: 2 } });

    const fourth = await start(s, campaignId);
    expect(refusal(fourth)).toEqual([
      expect.objectContaining({ message: expect.stringContaining('WS_MAX_SUBSCRIPTIONS_PER_SOCKET'), extensions: expect.objectContaining({ code: 'LIMIT_REACHED', limit: 3 }) }),
    ]);
    expect(s.closed()).toBeUndefined();

    open[0]!.stop();
    await until(async () => (await start(s, campaignId)).results[0]?.data, { message: 'a slot to free once a subscription completes', timeoutMs: 3_000 });
  });

  test('a subscription that ends in an error gives its slot back', async () => {
    const key = await viewerKey();
    const s = socket(capped, key);
    // Five subscriptions in turn to a campaign that does not exist: each takes a slot, fails, and frees it.
    for (let i = 0; i < 5; i += 1) {
      const sub = await start(s, '00000000-0000-0000-0000-00000000000f');
      expect(refusal(sub).map((e) => e.extensions?.code)).toEqual(['NOT_FOUND']);
    }
    const campaignId = await capped.openCampaignWith(1);
    for (let i = 0; i < 3; i += 1) expect((await start(s, campaignId)).results[0]!.data).toBeTruthy();
  });

  test('a key holds at most WS_MAX_SUBSCRIPTIONS_PER_KEY over all its sockets; closing a socket frees its slots', async () => {
    const key = await viewerKey();
    const campaignId = await capped.openCampaignWith(1);
    const a = socket(capped, key);
    const b = socket(capped, key);
    for (let i = 0; i < 3; i += 1) expect((await start(a, campaignId)).results[0]!.data).toBeTruthy();
    for (let i = 0; i < 2; i += 1) expect((await start(b, campaignId)).results[0]!.data).toBeTruthy();
    const sixth = await start(b, campaignId);
    expect(refusal(sixth)).toEqual([
      expect.objectContaining({ message: expect.stringContaining('WS_MAX_SUBSCRIPTIONS_PER_KEY'), extensions: expect.objectContaining({ code: 'LIMIT_REACHED', limit: 5 }) }),
    ]);
    // Another key is not affected.
    expect((await start(socket(capped, await viewerKey()), campaignId)).results[0]!.data).toBeTruthy();

    await a.dispose();
    await until(async () => (await start(b, campaignId)).results[0]?.data, { message: "the closed socket's slots to free", timeoutMs: 3_000 });
  });

  test('ADMIN_API_KEY is capped per socket only', async () => {
    const campaignId = await capped.openCampaignWith(1);
    for (const s of [socket(capped, ADMIN_KEY), socket(capped, ADMIN_KEY)]) {
      for (let i = 0; i < 3; i += 1) expect((await start(s, campaignId)).results[0]!.data).toBeTruthy();
      expect(refusal(await start(s, campaignId)).map((e) => e.extensions?.code)).toEqual(['LIMIT_REACHED']);
    }
  });
});

describe('one stats feed per campaign', () => {
  test('30 subscribers of one campaign cost one stats read per change, not 30; each gets the claim; the feed stops with the last of them', async () => {
    const reads = jest.spyOn(CampaignFeed.prototype, 'read');
    try {
      const partner = await server.createPartner();
      const campaignId = await server.openCampaignWith(10);
      const readsOfCampaign = () => reads.mock.contexts.filter((feed) => Reflect.get(feed as object, 'campaignId') === campaignId).length;
      // Two sockets of 15: the default cap is 20 a socket.
      const subs = [socket(server, ADMIN_KEY), socket(server, ADMIN_KEY)].flatMap((s) =>
        Array.from({ length: 15 }, () => openSubscription(s, { query: LIVE, variables: { id: campaignId } })),
      );
      await until(() => subs.every((sub) => sub.results.length >= 1), { message: 'every subscriber to get the stats', timeoutMs: 5_000 });
      for (const sub of subs) expect(sub.results[0]!.data).toEqual({ campaignStats: { total: 10, allocated: 0, available: 10 } });
      const joining = readsOfCampaign();

      const before = readsOfCampaign();
      await server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: 'shared' } });
      await until(() => subs.every((sub) => sub.results.some((r) => (r.data?.campaignStats as { allocated: number } | undefined)?.allocated === 1)), {
        message: 'every subscriber to get the claim',
        timeoutMs: 5_000,
      });
      // The trailing signal of live.ts (100 ms after the first) may cost one read more.
      await sleep(500);
      const perClaim = readsOfCampaign() - before;
      console.info(`30 subscribers: ${joining} read(s) while they joined, ${perClaim} read(s) for one claim`);
      expect(joining).toBeLessThanOrEqual(2);
      expect(perClaim).toBeGreaterThanOrEqual(1);
      expect(perClaim).toBeLessThanOrEqual(3);
      for (const sub of subs) expect(sub.results).toHaveLength(2);

      for (const sub of subs) sub.stop();
      await sleep(100);
      const afterLeaving = readsOfCampaign();
      // Longer than the feed's poll (2 s): no read once nobody watches.
      await sleep(2_500);
      expect(readsOfCampaign()).toBe(afterLeaving);
    } finally {
      reads.mockRestore();
    }
  });
});
