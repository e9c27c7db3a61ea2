// The failed-authentication limit counts a client by one spelling of its address
// (src/clientAddress.ts's addressKey): `2001:DB8::1` and `2001:db8:0:0::1` are `2001:db8::1`,
// `::ffff:10.0.0.1` is `10.0.0.1`, and an IPv6 client is counted by its /64
// (AUTH_FAILURE_IPV6_PREFIX) — over HTTP and over graphql-ws alike. The test client is a trusted
// proxy, so X-Forwarded-For names the client.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { addressKey } from '../src/clientAddress';
import { loadConfig } from '../src/config';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';
import { tempDir } from './helpers/tempDirs';

const LIMIT = 3;
const wrongKey = () => `tsp_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;

describe('addressKey', () => {
  test('one IPv6 address however it is written is one key: lower-case, compressed, its /64', () => {
    const keys = ['2001:DB8::1', '2001:db8:0:0::1', '2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::2', '2001:db8::ffff:1'].map((a) => addressKey(a));
    expect(new Set(keys)).toEqual(new Set(['2001:db8::/64']));
  });

  test('another /64 is another key', () => {
    expect(addressKey('2001:db8:0:1::1')).toBe('2001:db8:0:1::/64');
    expect(addressKey('2001:db8:0:1::1')).not.toBe(addressKey('2001:db8::1'));
  });

  test('an IPv4-mapped IPv6 address is the IPv4 address it maps', () => {
    expect(addressKey('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(addressKey('::FFFF:a00:1')).toBe('10.0.0.1');
    expect(addressKey('10.0.0.1')).toBe('10.0.0.1');
  });

  test('the prefix length is configurable: 128 counts each address, 48 a whole site', () => {
    expect(addressKey('2001:DB8:0:0::1', 128)).toBe('2001:db8::1/128');
    expect(addressKey('2001:db8::2', 128)).not.toBe(addressKey('2001:db8::1', 128));
    expect(addressKey('2001:db8:0:1::1', 48)).toBe(addressKey('2001:db8:0:2::1', 48));
  });

  test('a link-local zone goes with the host bits; what is no address is its own key', () => {
    expect(addressKey('fe80::1%eth0')).toBe('fe80::/64');
    expect(addressKey('unknown')).toBe('unknown');
  });
});

describe('AUTH_FAILURE_IPV6_PREFIX', () => {
  const base = { NODE_ENV: 'test', ADMIN_API_KEY: ADMIN_KEY, DATABASE_URL: 'postgresql://localhost/tessera', EMBEDDED_PG_DIR: path.join(tempDir('tessera-config-'), 'pgdata') };
  test('is 64 unless set, and any length from 1 to 128', () => {
    expect(loadConfig(base).rateLimit.authFailureIpv6Prefix).toBe(64);
    expect(loadConfig({ ...base, AUTH_FAILURE_IPV6_PREFIX: '128' }).rateLimit.authFailureIpv6Prefix).toBe(128);
    expect(loadConfig({ ...base, AUTH_FAILURE_IPV6_PREFIX: '1' }).rateLimit.authFailureIpv6Prefix).toBe(1);
  });

  test.each(['0', '129', '64.5', 'wide'])('refuses %s, naming the variable', (value) => {
    expect(() => loadConfig({ ...base, AUTH_FAILURE_IPV6_PREFIX: value })).toThrow(/AUTH_FAILURE_IPV6_PREFIX must be an integer from 1 to 128/);
  });
});

/** POST /graphql through the test client as a trusted proxy, for the client `forwardedFor`; resolves with the status. */
function post(url: string, forwardedFor: string, key: string): Promise<number> {
  const body = JSON.stringify({ query: '{ __typename }' });
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${key}`, 'x-forwarded-for': forwardedFor } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A graphql-ws connection whose upgrade request names the client `forwardedFor`; resolves with its close code, or 'open'. */
async function connect(url: string, forwardedFor: string, key: string): Promise<number | 'open'> {
  let closeCode: number | undefined;
  let opened = false;
  class ProxiedWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { headers: { 'x-forwarded-for': forwardedFor } });
    }
  }
  const client = createClient({
    url: url.replace(/^http/, 'ws'),
    webSocketImpl: ProxiedWebSocket,
    connectionParams: { Authorization: `Bearer ${key}` },
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: () => undefined,
    on: { connected: () => (opened = true), closed: (event) => (closeCode = (event as { code?: number }).code) },
  });
  try {
    return await until(() => (opened ? 'open' : closeCode), { message: 'the socket to open or close' });
  } finally {
    await client.dispose();
  }
}

describe('over both transports, one client however its address is written', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      config: { env: 'production', trustProxy: { addresses: ['127.0.0.1'], header: 'x-forwarded-for' }, rateLimit: { pointsPerSecond: 20_000, burstPoints: 100_000, authFailuresPerMinute: LIMIT } },
    });
  });
  afterAll(() => server.stop());

  test('over HTTP, failures from 2001:DB8::1, 2001:db8:0:0::1 and 2001:db8::2 count together', async () => {
    for (const address of ['2001:DB8::1', '2001:db8:0:0::1', '2001:db8::2']) expect(await post(server.url, address, wrongKey())).toBe(401);
    expect(await post(server.url, '2001:db8::1', wrongKey())).toBe(429);
    expect(await post(server.url, '2001:db8::abcd', wrongKey())).toBe(429);
    // Another /64 is another client; a valid key from the blocked one still gets in.
    expect(await post(server.url, '2001:db8:0:1::1', wrongKey())).toBe(401);
    expect(await post(server.url, '2001:db8::1', ADMIN_KEY)).toBe(200);
  });

  test('over HTTP, failures from ::ffff:10.0.0.1 count with 10.0.0.1', async () => {
    for (let i = 0; i < LIMIT; i += 1) expect(await post(server.url, '::ffff:10.0.0.1', wrongKey())).toBe(401);
    expect(await post(server.url, '10.0.0.1', wrongKey())).toBe(429);
    expect(await post(server.url, '10.0.0.2', wrongKey())).toBe(401);
  });

  test('over the socket, failures from one /64 written three ways count together, and with HTTP', async () => {
    for (const address of ['2001:DB8:0:5::1', '2001:db8:0:5:0::2', '2001:db8:0:5::3']) expect(await connect(server.url, address, wrongKey())).toBe(4403);
    expect(await post(server.url, '2001:db8:0:5::ffff', wrongKey())).toBe(429);
    expect(await post(server.url, '2001:db8:0:6::1', wrongKey())).toBe(401);
  });

  test('over the socket, failures from ::ffff:10.0.0.5 count with 10.0.0.5', async () => {
    for (let i = 0; i < LIMIT; i += 1) expect(await connect(server.url, '::ffff:10.0.0.5', wrongKey())).toBe(4403);
    expect(await post(server.url, '10.0.0.5', wrongKey())).toBe(429);
    // And the other way round: HTTP failures from the IPv4 spelling keep the mapped one out.
    for (let i = 0; i < LIMIT; i += 1) expect(await post(server.url, '10.0.0.6', wrongKey())).toBe(401);
    expect(await post(server.url, '::ffff:10.0.0.6', wrongKey())).toBe(429);
  });
});

describe('AUTH_FAILURE_IPV6_PREFIX=128', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      config: {
        env: 'production',
        trustProxy: { addresses: ['127.0.0.1'], header: 'x-forwarded-for' },
        rateLimit: { pointsPerSecond: 20_000, burstPoints: 100_000, authFailuresPerMinute: LIMIT, authFailureIpv6Prefix: 128 },
      },
    });
  });
  afterAll(() => server.stop());

  test('counts each address apart, however it is written', async () => {
    for (const address of ['2001:DB8::1', '2001:db8:0:0::1', '2001:0db8::0001']) expect(await post(server.url, address, wrongKey())).toBe(401);
    expect(await post(server.url, '2001:db8::1', wrongKey())).toBe(429);
    expect(await post(server.url, '2001:db8::2', wrongKey())).toBe(401);
  });
});
