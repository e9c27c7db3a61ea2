// The client address behind trusted proxies (TRUST_PROXY, issue 26): the key of the
// failed-authentication limit. Unit tests of the header walk, then both transports against a server
// that trusts the test client (127.0.0.1) as its proxy.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createClientAddress, forwardedElements, nodeAddress } from '../src/clientAddress';
import type { Config } from '../src/config';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';

const request = (remoteAddress: string | undefined, headers: http.IncomingHttpHeaders = {}) => ({ headers, socket: { remoteAddress } });
const trusting = (addresses: string[], header?: Config['trustProxy']['header']) => createClientAddress({ addresses, header });

describe('the client address', () => {
  test('is the socket address when no proxy is trusted (the default), whatever the headers say', () => {
    const address = createClientAddress();
    expect(address(request('198.51.100.7', { 'x-forwarded-for': '203.0.113.1', forwarded: 'for=203.0.113.2' }))).toBe('198.51.100.7');
    expect(address(request(undefined))).toBe('unknown');
    expect(createClientAddress({ addresses: [], header: undefined })(request('198.51.100.7', { 'x-forwarded-for': '203.0.113.1' }))).toBe('198.51.100.7');
  });

  test('is the socket address when the peer is not a trusted proxy', () => {
    expect(trusting(['10.0.0.1'])(request('198.51.100.7', { 'x-forwarded-for': '203.0.113.1' }))).toBe('198.51.100.7');
  });

  test('X-Forwarded-For: the rightmost address that is not a trusted proxy', () => {
    const address = trusting(['127.0.0.1', '10.0.0.0/8']);
    expect(address(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7' }))).toBe('203.0.113.7');
    // What the client wrote itself (left) is never reached.
    expect(address(request('127.0.0.1', { 'x-forwarded-for': '1.2.3.4, 203.0.113.7' }))).toBe('203.0.113.7');
    expect(address(request('127.0.0.1', { 'x-forwarded-for': '1.2.3.4, 198.51.100.1, 10.0.0.2, 10.1.2.3' }))).toBe('198.51.100.1');
    // Every hop trusted: the furthest.
    expect(address(request('127.0.0.1', { 'x-forwarded-for': '10.0.0.3, 10.0.0.2' }))).toBe('10.0.0.3');
    // IPv6, with ports, an IPv4-mapped peer.
    expect(address(request('::ffff:127.0.0.1', { 'x-forwarded-for': '2001:db8::1' }))).toBe('2001:db8::1');
    expect(address(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7:51234' }))).toBe('203.0.113.7');
    expect(address(request('127.0.0.1', { 'x-forwarded-for': '[2001:db8::2]:443' }))).toBe('2001:db8::2');
    // An entry that is no address ends the walk at the proxy that wrote it.
    expect(address(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7, unknown' }))).toBe('127.0.0.1');
    expect(address(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7, 10.0.0.2, ' }))).toBe('127.0.0.1');
    expect(address(request('127.0.0.1', { 'x-forwarded-for': 'garbage, 10.0.0.2' }))).toBe('10.0.0.2');
  });

  test('proxy-addr names: loopback trusts 127.0.0.0/8 and ::1', () => {
    const address = trusting(['loopback']);
    expect(address(request('::1', { 'x-forwarded-for': '203.0.113.9' }))).toBe('203.0.113.9');
    expect(address(request('127.0.0.2', { 'x-forwarded-for': '203.0.113.9' }))).toBe('203.0.113.9');
  });

  test('Forwarded (RFC 7239): for= values, quoted, IPv6 in brackets, ports, several elements and header lines', () => {
    const address = trusting(['127.0.0.1', '198.51.100.17']);
    expect(address(request('127.0.0.1', { forwarded: 'for=192.0.2.60;proto=http;by=203.0.113.43' }))).toBe('192.0.2.60');
    expect(address(request('127.0.0.1', { forwarded: 'For="[2001:db8:cafe::17]:4711"' }))).toBe('2001:db8:cafe::17');
    expect(address(request('127.0.0.1', { forwarded: 'for="192.0.2.43:47011"' }))).toBe('192.0.2.43');
    expect(address(request('127.0.0.1', { forwarded: 'for=192.0.2.43, for=198.51.100.17' }))).toBe('192.0.2.43');
    expect(address(request('127.0.0.1', { forwarded: 'for=192.0.2.43, for=198.51.100.18;proto=https' }))).toBe('198.51.100.18');
    // A quoted value may hold commas and semicolons; parameters come in any order.
    expect(address(request('127.0.0.1', { forwarded: 'proto=https;host="a,b;c";for=192.0.2.44' }))).toBe('192.0.2.44');
    // `unknown` and obfuscated identifiers stop the walk: the proxy that wrote them stands for the client.
    expect(address(request('127.0.0.1', { forwarded: 'for=192.0.2.43, for=unknown' }))).toBe('127.0.0.1');
    expect(address(request('127.0.0.1', { forwarded: 'for=192.0.2.43, for=_hidden, for=198.51.100.17' }))).toBe('198.51.100.17');
    // An element with no for= stops it too.
    expect(address(request('127.0.0.1', { forwarded: 'for=192.0.2.43, proto=https' }))).toBe('127.0.0.1');
  });

  test('Forwarded elements and node addresses, parsed', () => {
    expect(forwardedElements('for=192.0.2.60;proto=http, for="[2001:db8::1]:80";by=x, by=y, for="a\\"b"')).toEqual(['192.0.2.60', '[2001:db8::1]:80', '', 'a"b']);
    expect(['192.0.2.1', '192.0.2.1:80', '[2001:db8::1]', '[2001:db8::1]:8080', '2001:db8::1'].map(nodeAddress)).toEqual(['192.0.2.1', '192.0.2.1', '2001:db8::1', '2001:db8::1', '2001:db8::1']);
    expect(['unknown', '_obf', '', 'example.com', '[zzz]', '1.2.3.4:99999', '300.1.1.1'].map(nodeAddress)).toEqual(Array(7).fill(undefined));
  });

  test('both headers present and no TRUST_PROXY_HEADER: neither is believed', () => {
    const headers = { 'x-forwarded-for': '203.0.113.1', forwarded: 'for=203.0.113.2' };
    expect(trusting(['127.0.0.1'])(request('127.0.0.1', headers))).toBe('127.0.0.1');
    // With TRUST_PROXY_HEADER, that one alone is read, and the other ignored.
    expect(trusting(['127.0.0.1'], 'x-forwarded-for')(request('127.0.0.1', headers))).toBe('203.0.113.1');
    expect(trusting(['127.0.0.1'], 'forwarded')(request('127.0.0.1', headers))).toBe('203.0.113.2');
    expect(trusting(['127.0.0.1'], 'forwarded')(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.1' }))).toBe('127.0.0.1');
  });

  test('repeated header lines are read as one list', () => {
    expect(trusting(['127.0.0.1', '10.0.0.2'])(request('127.0.0.1', { 'x-forwarded-for': ['203.0.113.5', '10.0.0.2'] as unknown as string }))).toBe('203.0.113.5');
  });
});

describe('over both transports, with the test client as a trusted proxy', () => {
  const LIMIT = 3;
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      config: { env: 'production', trustProxy: { addresses: ['127.0.0.1', '127.0.0.60'], header: undefined }, rateLimit: { pointsPerSecond: 20_000, burstPoints: 100_000, authFailuresPerMinute: LIMIT } },
    });
  });
  afterAll(() => server.stop());

  const wrongKey = () => `tsp_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;

  /** POST /graphql from `localAddress` with these headers. */
  function post(localAddress: string, key: string, headers: Record<string, string> = {}): Promise<number> {
    const body = JSON.stringify({ query: '{ __typename }' });
    return new Promise((resolve, reject) => {
      const req = http.request(
        server.url,
        { method: 'POST', localAddress, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${key}`, ...headers } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /** A graphql-ws connection from `localAddress` whose upgrade request carries these headers; resolves with its close code, or 'open'. */
  async function connect(localAddress: string, key: string, headers: Record<string, string> = {}): Promise<number | 'open'> {
    let closeCode: number | undefined;
    let opened = false;
    class ProxiedWebSocket extends WebSocket {
      constructor(address: string, protocols?: string | string[]) {
        super(address, protocols, { localAddress, headers });
      }
    }
    const client = createClient({
      url: server.url.replace(/^http/, 'ws'),
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

  const failures = async (count: number, send: (i: number) => Promise<unknown>) => {
    for (let i = 0; i < count; i += 1) await send(i);
  };

  test('over HTTP, two X-Forwarded-For clients of one proxy are limited apart', async () => {
    await failures(LIMIT, () => post('127.0.0.1', wrongKey(), { 'x-forwarded-for': '203.0.113.1' }));
    expect(await post('127.0.0.1', wrongKey(), { 'x-forwarded-for': '203.0.113.1' })).toBe(429);
    // Another client behind the same proxy: its own count.
    expect(await post('127.0.0.1', wrongKey(), { 'x-forwarded-for': '203.0.113.2' })).toBe(401);
    // The proxy itself, for requests of its own: not blocked either.
    expect(await post('127.0.0.1', wrongKey())).toBe(401);
  });

  test('over HTTP, Forwarded clients are limited apart', async () => {
    await failures(LIMIT, () => post('127.0.0.1', wrongKey(), { forwarded: 'for="[2001:db8::7]:4711";proto=https' }));
    expect(await post('127.0.0.1', wrongKey(), { forwarded: 'for="[2001:db8::7]:5000"' })).toBe(429);
    expect(await post('127.0.0.1', wrongKey(), { forwarded: 'for=192.0.2.9' })).toBe(401);
  });

  test("an untrusted peer's X-Forwarded-For is ignored: its failures are its own, whatever it claims", async () => {
    await failures(LIMIT, (i) => post('127.0.0.51', wrongKey(), { 'x-forwarded-for': `203.0.113.${100 + i}` }));
    expect(await post('127.0.0.51', wrongKey(), { 'x-forwarded-for': '203.0.113.200' })).toBe(429);
    expect(await post('127.0.0.51', wrongKey())).toBe(429);
  });

  test('both headers from a trusted proxy and no TRUST_PROXY_HEADER: the proxy is the client', async () => {
    await failures(LIMIT, (i) => post('127.0.0.60', wrongKey(), { 'x-forwarded-for': `203.0.113.${30 + i}`, forwarded: `for=203.0.113.${40 + i}` }));
    expect(await post('127.0.0.60', wrongKey(), { 'x-forwarded-for': '203.0.113.50', forwarded: 'for=203.0.113.51' })).toBe(429);
  });

  test("over the socket, the upgrade request's X-Forwarded-For names the client", async () => {
    await failures(LIMIT, async () => expect(await connect('127.0.0.1', wrongKey(), { 'x-forwarded-for': '203.0.113.20' })).toBe(4403));
    // That client is now over its limit, over HTTP too; another client of the proxy is not.
    expect(await post('127.0.0.1', wrongKey(), { 'x-forwarded-for': '203.0.113.20' })).toBe(429);
    expect(await post('127.0.0.1', wrongKey(), { 'x-forwarded-for': '203.0.113.21' })).toBe(401);
    // A valid key from the blocked client still opens a socket.
    expect(await connect('127.0.0.1', ADMIN_KEY, { 'x-forwarded-for': '203.0.113.20' })).toBe('open');
  });

  test('over the socket, Forwarded names the client, and an untrusted peer is its own client', async () => {
    await failures(LIMIT, () => connect('127.0.0.1', wrongKey(), { forwarded: 'for=192.0.2.77' }));
    expect(await post('127.0.0.1', wrongKey(), { forwarded: 'for=192.0.2.77' })).toBe(429);
    await failures(LIMIT, (i) => connect('127.0.0.52', wrongKey(), { 'x-forwarded-for': `203.0.113.${60 + i}` }));
    expect(await post('127.0.0.52', wrongKey())).toBe(429);
  });
});
