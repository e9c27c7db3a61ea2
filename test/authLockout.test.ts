// The failed-authentication limit (issue 26): failures are counted per client address, but they
// never lock out a request that presents a valid key — the admin key, checked in memory, or a key
// whose prefix is known to exist — while everything else from a blocked address gets one and the same
// 429, no sooner than the floor. And failures are counted before the look-up: a burst of guesses from
// one address costs about AUTH_FAILURES_PER_MINUTE look-ups, not one per guess. Over HTTP and over
// graphql-ws alike; loopback aliases (127.0.0.x) stand for distinct clients.
import { randomBytes } from 'node:crypto';
import { AUTH_FAILURE_FLOOR_MS } from '../src/admission';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';
import { sleep, until } from './helpers/time';
import { connectSocket, muteClosedSocketErrors, postFrom, runOverSocket, type SocketClient, socketErrors } from './helpers/ws';

const LIMIT = 5;
const TTL_MS = 1_000;
const LIVE = 'subscription Live($id: ID!) { campaignStats(id: $id) { total allocated available } }';
/** No sweeper, no webhook dispatcher, no refusal flush: the statement counts are the requests' own. */
const QUIET = { holdSweepIntervalMs: 0, refusalFlushMs: 600_000, webhooks: { secretKey: undefined, allowPrivateNetworks: false, production: true } } as const;

const unknownKey = () => `tsp_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;
const wrongSecret = (key: string) => `${key.slice(0, 'tsp_'.length + 12 + 1)}${randomBytes(32).toString('base64url')}`;
const codes = (errors: { extensions?: Record<string, unknown> }[] | undefined) => (errors ?? []).map((e) => e.extensions?.code);

let server: TestServer;
let partner: { id: string; apiKey: string };
let operatorKey: string;
let campaignId: string;
const sockets: SocketClient[] = [];
const socket = (key: string | null, localAddress: string, url = server.url) => {
  const s = connectSocket(url, key, { localAddress });
  sockets.push(s);
  return s;
};

// graphql-ws prints every refused connection on the console (its onNonLazyError); here they are refused on purpose.
muteClosedSocketErrors();

beforeAll(async () => {
  server = await startTestServer({ config: { env: 'production', apiKeyCacheTtlMs: TTL_MS, rateLimit: { pointsPerSecond: 20_000, burstPoints: 100_000, authFailuresPerMinute: LIMIT }, ...QUIET } });
  partner = await server.createPartner();
  const made = await server.gql(ADMIN_KEY, 'mutation { createOperatorKey(input: { name: "dashboard", role: VIEWER }) { apiKey } }');
  operatorKey = made.body.data!.createOperatorKey.apiKey;
  campaignId = await server.openCampaignWith(3);
});
afterEach(async () => {
  await Promise.all(sockets.splice(0).map((s) => s.dispose()));
});
afterAll(() => server.stop());

/** LIMIT + 1 wrong keys from `address`: from then on it is over its limit. */
async function block(address: string, url = server.url): Promise<void> {
  for (let i = 0; i <= LIMIT; i += 1) await postFrom(url, address, unknownKey(), '{ __typename }');
  const probe = await postFrom(url, address, unknownKey(), '{ __typename }');
  expect(probe.status).toBe(429);
}

describe('a blocked address', () => {
  test('still gets in over HTTP with a valid partner key, an operator key and the admin key', async () => {
    await block('127.0.0.31');
    expect((await postFrom(server.url, '127.0.0.31', partner.apiKey, '{ viewer { partner { id } } }')).body.data).toEqual({ viewer: { partner: { id: partner.id } } });
    expect((await postFrom(server.url, '127.0.0.31', operatorKey, '{ viewer { role } }')).body.data).toEqual({ viewer: { role: 'VIEWER' } });
    expect((await postFrom(server.url, '127.0.0.31', ADMIN_KEY, '{ viewer { role } }')).body.data).toEqual({ viewer: { role: 'OWNER' } });
    // Valid keys do not lift the block for the others.
    expect((await postFrom(server.url, '127.0.0.31', unknownKey(), '{ __typename }')).status).toBe(429);
  });

  test('still opens sockets and subscribes with a valid partner key, an operator key and the admin key', async () => {
    await block('127.0.0.32');
    // A partner may not watch stats: FORBIDDEN from the field, over a socket that was admitted and stays open.
    const asPartner = socket(partner.apiKey, '127.0.0.32');
    expect(codes(socketErrors(await runOverSocket(asPartner, { query: LIVE, variables: { id: campaignId } })))).toEqual(['FORBIDDEN']);
    expect(asPartner.closed()).toBeUndefined();
    for (const key of [operatorKey, ADMIN_KEY]) {
      const s = socket(key, '127.0.0.32');
      const outcome = await runOverSocket(s, { query: LIVE, variables: { id: campaignId } });
      expect(outcome.results[0]?.data).toEqual({ campaignStats: { total: 3, allocated: 0, available: 3 } });
      expect(s.closed()).toBeUndefined();
    }
  });

  test('keeps its open sockets with valid keys past the periodic recheck', async () => {
    const s = socket(operatorKey, '127.0.0.33');
    expect((await runOverSocket(s, { query: LIVE, variables: { id: campaignId } })).results).toHaveLength(1);
    await block('127.0.0.33');
    // Two sweeps (every API_KEY_CACHE_TTL_MS) later, the socket is open and still answers.
    await sleep(2 * TTL_MS + 200);
    expect(s.closed()).toBeUndefined();
    expect((await runOverSocket(s, { query: LIVE, variables: { id: campaignId } })).results).toHaveLength(1);
  });

  test('gets one and the same 429 for an unknown prefix, a wrong secret, a malformed key and no key, no sooner than the floor', async () => {
    await block('127.0.0.34');
    const answers = [];
    for (const key of [unknownKey(), wrongSecret(partner.apiKey), wrongSecret(operatorKey), 'not-a-key', null]) {
      const started = performance.now();
      const answer = await postFrom(server.url, '127.0.0.34', key, '{ __typename }');
      expect(performance.now() - started).toBeGreaterThanOrEqual(AUTH_FAILURE_FLOOR_MS);
      answers.push(answer);
    }
    for (const answer of answers) {
      expect(answer.status).toBe(429);
      expect(codes(answer.body.errors)).toEqual(['RATE_LIMITED']);
      expect(answer.body).toEqual(answers[0]!.body);
    }
  });

  test('gets its sockets refused for an unknown prefix and a wrong secret alike', async () => {
    await block('127.0.0.35');
    for (const key of [unknownKey(), wrongSecret(partner.apiKey)]) {
      const s = socket(key, '127.0.0.35');
      await until(() => s.closed() !== undefined, { message: 'the socket to be refused' });
      expect(s.closed()).toBe(4403);
    }
  });

  test('admits a key made on another instance (no relay) within API_KEY_CACHE_TTL_MS', async () => {
    const other = await startTestServer({ databaseUrl: server.databaseUrl, config: { env: 'production', apiKeyCacheTtlMs: TTL_MS, ...QUIET } });
    try {
      await block('127.0.0.36');
      const made = await other.createPartner('made elsewhere');
      const started = performance.now();
      await until(async () => (await postFrom(server.url, '127.0.0.36', made.apiKey, '{ __typename }')).status === 200, {
        message: 'the new key to be admitted from the blocked address',
        timeoutMs: 3 * TTL_MS,
        intervalMs: 100,
      });
      expect(performance.now() - started).toBeLessThan(TTL_MS + 500);
    } finally {
      await other.stop();
    }
  });
});

describe('guesses are counted before they are looked up', () => {
  let quiet: TestServer;
  beforeAll(async () => {
    // One connection, so that a burst can be made to arrive while look-ups wait for it.
    quiet = await startTestServer({ database: { poolSize: 1 }, config: { env: 'production', apiKeyCacheTtlMs: TTL_MS, ...QUIET } });
  });
  afterAll(() => quiet.stop());

  /** Statements the server sent to PostgreSQL for `burst` (nothing else runs on this server). */
  async function statementsFor(burst: () => Promise<unknown>): Promise<number> {
    const before = quiet.db.statements.count;
    await burst();
    await sleep(100); // a look-up still in flight when the last answer left
    return quiet.db.statements.count - before;
  }

  /**
   * Starts `burst` while the server's only connection is taken, and gives it back a moment later:
   * every request of the burst has arrived before the first look-up could run, as when an attacker's
   * guesses arrive faster than a database answers them.
   */
  async function whileThePoolIsBusy<T>(burst: () => Promise<T>): Promise<T> {
    const held = await quiet.db.pool.connect();
    const outcome = burst();
    await sleep(500);
    held.release();
    return outcome;
  }

  test('200 concurrent wrong keys from one address over HTTP cost at most about AUTH_FAILURES_PER_MINUTE look-ups', async () => {
    let statuses: number[] = [];
    const statements = await statementsFor(async () => {
      const answers = await whileThePoolIsBusy(() => Promise.all(Array.from({ length: 200 }, () => postFrom(quiet.url, '127.0.0.41', unknownKey(), '{ __typename }'))));
      statuses = answers.map((a) => a.status);
    });
    expect(statuses.filter((s) => s === 401)).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(140);
    expect(statements).toBeLessThanOrEqual(60 + 2);
  });

  test('200 concurrent sockets with wrong keys from one address cost as little', async () => {
    const opened = Array.from({ length: 200 }, () => connectSocket(quiet.url, unknownKey(), { localAddress: '127.0.0.42' }));
    sockets.push(...opened);
    const statements = await statementsFor(() =>
      whileThePoolIsBusy(() => until(() => opened.every((s) => s.closed() !== undefined), { message: 'every socket to be refused', timeoutMs: 20_000 })),
    );
    expect(new Set(opened.map((s) => s.closed()))).toEqual(new Set([4403]));
    expect(statements).toBeLessThanOrEqual(60 + 2);
  });

  test('the same wrong key again and again is looked up once per API_KEY_CACHE_TTL_MS', async () => {
    const key = unknownKey();
    const statements = await statementsFor(async () => {
      for (let i = 0; i < 20; i += 1) expect((await postFrom(quiet.url, '127.0.0.43', key, '{ __typename }')).status).toBe(401);
    });
    expect(statements).toBeLessThanOrEqual(2);
  });

  test('valid keys give their reserved point back: a partner never locks itself out', async () => {
    // No key cache: every request looks its key up, so each one reserves a point and gives it back.
    const uncached = await startTestServer({ config: { env: 'production', apiKeyCacheTtlMs: 0, rateLimit: { pointsPerSecond: 20_000, burstPoints: 100_000, authFailuresPerMinute: LIMIT }, ...QUIET } });
    try {
      const own = await uncached.createPartner();
      for (let i = 0; i < 4 * LIMIT; i += 1) expect((await postFrom(uncached.url, '127.0.0.44', own.apiKey, '{ __typename }')).status).toBe(200);
      // The address is not blocked: an unknown key gets the 401 of a first failure.
      expect((await postFrom(uncached.url, '127.0.0.44', unknownKey(), '{ __typename }')).status).toBe(401);
    } finally {
      await uncached.stop();
    }
  });
});
