// @dialects postgresql citus
// Webhook delivery primitives (src/webhooks/): signing, secrets at rest, the URL and address policy,
// one delivery attempt and the retry schedule. Deliveries go over real sockets to node:http receivers
// on 127.0.0.1 (port 0); nothing on the network is mocked. Clocks and randomness are injected.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  FIRST_RETRY_MS,
  GIVE_UP_AFTER_MS,
  LEASE_MS,
  MAX_RETRIES,
  MAX_STEP_MS,
  nextAttemptDelayMs,
} from '../src/webhooks/backoff';
import { DELIVERY_TIMEOUT_MS, deliverOnce, USER_AGENT, type AttemptResult, type DeliveryAttempt } from '../src/webhooks/deliver';
import { openSecret, sealSecret, WEBHOOK_KEY_FILE, webhookKeyFrom } from '../src/webhooks/secrets';
import { newWebhookSecret, signatureHeader, verifySignature } from '../src/webhooks/signature';
import { checkEndpointUrl, isForbiddenAddress } from '../src/webhooks/urlPolicy';
import { until } from './helpers/time';

interface Received {
  headers: http.IncomingHttpHeaders;
  rawBody: string;
}

interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Connections accepted, and those still open. */
  readonly connections: number;
  open: Set<Socket>;
}

/** What the receiver does once it has read a request's body. */
type Answer = (req: http.IncomingMessage, res: http.ServerResponse, rawBody: string) => void;

const servers: http.Server[] = [];
const tempDirs: string[] = [];

async function startReceiver(answer: Answer): Promise<Receiver> {
  const received: Received[] = [];
  const open = new Set<Socket>();
  let connections = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      received.push({ headers: req.headers, rawBody });
      answer(req, res, rawBody);
    });
  });
  server.on('connection', (socket) => {
    connections += 1;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    get connections() {
      return connections;
    },
    open,
  };
}

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

const SECRET = newWebhookSecret();
/** 2030-01-01T00:00:00Z: the signatures' clock, and the receivers'. */
const NOW = new Date(1_893_456_000_000);

function event(): { id: string; body: string } {
  const id = `evt_${randomBytes(8).toString('hex')}`;
  const body = JSON.stringify({ id, type: 'ALLOCATION_CREATED', createdAt: NOW.toISOString(), data: { allocation: { id: 'a1' } } });
  return { id, body };
}

function attempt(url: string, overrides: Partial<DeliveryAttempt> = {}): Promise<AttemptResult> {
  const { id, body } = event();
  return deliverOnce({ url, body, eventId: id, secret: SECRET, production: false, now: NOW, ...overrides });
}

const answerWith = (status: number, headers: http.OutgoingHttpHeaders = {}): Answer => (_req, res) => {
  res.writeHead(status, headers).end();
};

describe('signature', () => {
  test('a receiver recomputes HMAC-SHA256 over "<t>.<raw body>" and finds the header\'s v1, and verifySignature agrees', async () => {
    const verdicts: { byHand: boolean; byLibrary: unknown }[] = [];
    const receiver = await startReceiver((req, res, rawBody) => {
      const header = String(req.headers['tessera-signature']);
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header) ?? [];
      const expected = createHmac('sha256', SECRET).update(`${t}.${rawBody}`).digest('hex');
      verdicts.push({
        byHand: t !== undefined && timingSafeEqual(Buffer.from(v1!), Buffer.from(expected)),
        byLibrary: verifySignature(header, rawBody, SECRET, { now: NOW }),
      });
      res.writeHead(204).end();
    });
    const outcome = await attempt(receiver.url);
    expect(outcome).toMatchObject({ ok: true, status: 204, error: null });
    expect(verdicts).toEqual([{ byHand: true, byLibrary: { ok: true } }]);
    expect(receiver.received[0]!.headers['tessera-signature']).toMatch(/^t=1893456000,v1=[0-9a-f]{64}$/);
  });

  test('a tampered body, a wrong secret, a stale or future t and a malformed header are rejected', () => {
    const body = '{"id":"evt_1"}';
    const header = signatureHeader(SECRET, body, NOW);
    const later = (seconds: number) => ({ now: new Date(NOW.getTime() + seconds * 1000) });
    expect(verifySignature(header, body, SECRET, later(299))).toEqual({ ok: true });
    expect(verifySignature(header, '{"id":"evt_2"}', SECRET, later(0))).toEqual({ ok: false, reason: 'mismatch' });
    expect(verifySignature(header, body, newWebhookSecret(), later(0))).toEqual({ ok: false, reason: 'mismatch' });
    expect(verifySignature(header, body, SECRET, later(301))).toEqual({ ok: false, reason: 'stale' });
    expect(verifySignature(header, body, SECRET, later(-301))).toEqual({ ok: false, reason: 'stale' });
    expect(verifySignature(header, body, SECRET, { ...later(60), toleranceSeconds: 30 })).toEqual({ ok: false, reason: 'stale' });
    for (const malformed of [undefined, '', 't=1893456000', header.replace(/v1=\w+/, 'v1=XYZ'), header.replace('t=', 'ts=')]) {
      expect(verifySignature(malformed, body, SECRET, later(0))).toEqual({ ok: false, reason: 'malformed' });
    }
  });

  test('a new secret is whsec_ and 32 random bytes in base64url', () => {
    const [a, b] = [newWebhookSecret(), newWebhookSecret()];
    expect(a).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a.slice('whsec_'.length), 'base64url')).toHaveLength(32);
    expect(a).not.toBe(b);
  });
});

describe('deliverOnce', () => {
  test('a 200 is a delivery; the request carries the contract\'s headers and Tessera-Event-Id is the body\'s id', async () => {
    const receiver = await startReceiver(answerWith(200));
    const { id, body } = event();
    const outcome = await deliverOnce({ url: receiver.url, body, eventId: id, secret: SECRET, production: false, now: NOW });
    expect(outcome).toEqual({ ok: true, status: 200, error: null, ms: expect.any(Number) });
    const [request] = receiver.received;
    expect(request!.rawBody).toBe(body);
    expect(request!.headers).toMatchObject({ 'content-type': 'application/json', 'user-agent': USER_AGENT });
    expect(request!.headers['tessera-event-id']).toBe(JSON.parse(request!.rawBody).id);
  });

  test('a 500 is not a delivery, and its status is recorded', async () => {
    const receiver = await startReceiver(answerWith(500));
    expect(await attempt(receiver.url)).toMatchObject({ ok: false, status: 500, error: 'HTTP 500' });
  });

  test('a 302 is not followed: the receiver it points to gets nothing', async () => {
    const elsewhere = await startReceiver(answerWith(200));
    const redirecting = await startReceiver(answerWith(302, { location: elsewhere.url }));
    expect(await attempt(redirecting.url)).toMatchObject({ ok: false, status: 302, error: 'redirect (302) not followed' });
    expect(elsewhere.connections).toBe(0);
  });

  test('a receiver that never answers is given up at the timeout, and the connection is closed', async () => {
    const silent = await startReceiver(() => undefined);
    const outcome = await attempt(silent.url, { timeoutMs: 300 });
    expect(outcome).toMatchObject({ ok: false, status: null, error: 'timeout after 300 ms' });
    expect(outcome.ms).toBeGreaterThanOrEqual(290);
    expect(outcome.ms).toBeLessThan(2_000);
    expect(silent.connections).toBe(1);
    await until(() => silent.open.size === 0, { message: 'the receiver to see the connection closed', timeoutMs: 2_000, intervalMs: 10 });
  });

  test('a 2xx with a large body counts, the body read only up to the bound', async () => {
    const chatty = await startReceiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.on('error', () => undefined); // the client hangs up after 64 KiB
      res.end(Buffer.alloc(4 * 1024 * 1024, 'x'));
    });
    expect(await attempt(chatty.url)).toMatchObject({ ok: true, status: 200, error: null });
  });

  test('a receiver that drops the connection is a failure without a status', async () => {
    const rude = await startReceiver((req) => req.socket.destroy());
    expect(await attempt(rude.url)).toEqual({ ok: false, status: null, error: 'connection reset', ms: expect.any(Number) });
  });

  test('a closed port is "connection refused"', async () => {
    const gone = http.createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const { port } = gone.address() as AddressInfo;
    await new Promise((resolve) => gone.close(resolve));
    expect(await attempt(`http://127.0.0.1:${port}/hooks`)).toMatchObject({ ok: false, status: null, error: 'connection refused' });
  });

  test('a URL the policy refuses is not attempted', async () => {
    const outcome = await attempt('http://example.com/hooks');
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toMatch(/^url refused: outside production, http is allowed only to/);
  });
});

describe('deliverOnce in production', () => {
  test('a host name resolving to a loopback address is refused at connect time, before TLS: "address not allowed", the address in the detail', async () => {
    const receiver = await startReceiver(answerWith(200));
    const outcome = await attempt(`https://localhost:${receiver.port}/hooks`, { production: true });
    expect(outcome).toMatchObject({ ok: false, status: null, error: 'address not allowed' });
    expect(outcome.detail).toMatch(/^localhost resolves to (127\.0\.0\.1|::1), a forbidden address$/);
    expect(receiver.connections).toBe(0);
  });

  test('a host name that does not resolve is answered as a refused address, the name in the detail', async () => {
    const outcome = await attempt('https://no-such-host.invalid/hooks', { production: true });
    expect(outcome).toMatchObject({ ok: false, status: null, error: 'address not allowed' });
    expect(outcome.detail).toMatch(/^no-such-host\.invalid did not resolve \(/);
  });

  test('with allowPrivate the same host is attempted (here a plain-http receiver fails the TLS handshake)', async () => {
    const receiver = await startReceiver(answerWith(200));
    const outcome = await attempt(`https://localhost:${receiver.port}/hooks`, { production: true, allowPrivate: true });
    expect(outcome).toMatchObject({ ok: false, status: null });
    expect(outcome.error).toMatch(/^TLS error \(/);
    expect(receiver.connections).toBe(1);
  });

  test('an address literal in a private range is refused before any connection', async () => {
    const outcome = await attempt('https://10.0.0.5/hooks', { production: true });
    expect(outcome.error).toBe('address not allowed');
    expect(outcome.detail).toBe('10.0.0.5 is a private or reserved address (private); production endpoints must be public');
  });
});

describe('urlPolicy', () => {
  test.each([
    ['http://example.com/hooks', 'production endpoints must use https'],
    ['http://127.0.0.1/hooks', 'production endpoints must use https'],
    ['https://10.0.0.1/hooks', 'private or reserved'],
    ['https://[::1]/hooks', 'private or reserved'],
    ['https://169.254.169.254/latest/meta-data', 'private or reserved'],
    ['https://[::ffff:192.168.0.1]/hooks', 'private or reserved'],
    ['https://0x7f000001/hooks', 'private or reserved'],
    ['https://user:pass@example.com/hooks', 'credentials'],
    ['https://example.com/hooks#part', 'fragment'],
    ['https://example.com/hooks#', 'fragment'],
    ['ftp://example.com/hooks', 'must be https'],
    ['/hooks', 'not an absolute URL'],
  ])('production refuses %s', (url, reason) => {
    const check = checkEndpointUrl(url, { production: true });
    expect(check.ok).toBe(false);
    expect(!check.ok && check.reason).toContain(reason);
  });

  test('a URL longer than 2048 characters is refused everywhere', () => {
    const url = `https://example.com/${'x'.repeat(2048)}`;
    for (const production of [true, false]) {
      expect(checkEndpointUrl(url, { production })).toEqual({ ok: false, reason: 'the URL is longer than 2048 characters' });
    }
  });

  test('production accepts a public https URL, and a private address only with allowPrivate', () => {
    const check = checkEndpointUrl('https://example.com/hooks?partner=1', { production: true });
    expect(check.ok && check.url.href).toBe('https://example.com/hooks?partner=1');
    expect(checkEndpointUrl('https://10.0.0.1/hooks', { production: true, allowPrivate: true }).ok).toBe(true);
    expect(checkEndpointUrl('https://169.254.169.254/', { production: true, allowPrivate: true }).ok).toBe(false);
    expect(checkEndpointUrl('http://10.0.0.1/hooks', { production: true, allowPrivate: true }).ok).toBe(false);
  });

  test.each(['http://127.0.0.1:1234/x', 'http://localhost/x', 'http://[::1]:8080/x', 'https://example.com/x', 'https://10.0.0.1/x'])(
    'outside production %s is accepted',
    (url) => expect(checkEndpointUrl(url, { production: false }).ok).toBe(true),
  );

  test.each(['http://example.com/x', 'http://10.0.0.1/x', 'http://127.0.0.2/x', 'http://u:p@localhost/x'])(
    'outside production %s is refused',
    (url) => expect(checkEndpointUrl(url, { production: false }).ok).toBe(false),
  );

  test.each([
    // forbidden: [address, forbidden, forbidden even with allowPrivate]
    ['127.0.0.1', true, false],
    ['10.0.0.5', true, false],
    ['172.16.3.4', true, false],
    ['192.168.1.1', true, false],
    ['100.64.0.1', true, false],
    ['169.254.169.254', true, true],
    ['0.0.0.0', true, true],
    ['255.255.255.255', true, true],
    ['224.0.0.1', true, true],
    ['192.0.2.1', true, true],
    ['240.0.0.1', true, true],
    ['::1', true, false],
    ['::', true, true],
    ['fe80::1', true, true],
    ['fc00::1', true, false],
    ['fd00:ec2::254', true, false],
    ['ff02::1', true, true],
    ['::ffff:10.0.0.1', true, false],
    ['::ffff:127.0.0.1', true, false],
    ['::ffff:169.254.169.254', true, true],
    // The deprecated IPv4-compatible form: ipaddr.js reads its dotted spelling as the mapped
    // address, so it is judged as 10.0.0.1 (refused; a private network); the hex spelling is
    // outside 2000::/3 and refused even with allowPrivate.
    ['::10.0.0.1', true, false],
    ['::a00:1', true, true],
    ['198.18.0.1', true, true],
    ['64:ff9b::a00:1', true, true],
    ['2002:a00:1::', true, true],
    ['2001:db8::1', true, true],
    ['not an address', true, true],
    ['93.184.216.34', false, false],
    ['8.8.8.8', false, false],
    ['2606:4700:4700::1111', false, false],
    ['::ffff:8.8.8.8', false, false],
  ])('isForbiddenAddress(%s) is %s, and %s with allowPrivate', (ip, forbidden, withAllowPrivate) => {
    expect(isForbiddenAddress(ip)).toBe(forbidden);
    expect(isForbiddenAddress(ip, { allowPrivate: true })).toBe(withAllowPrivate);
  });
});

describe('secrets at rest', () => {
  const key = randomBytes(32);
  const secret = newWebhookSecret();

  test('a sealed secret opens with its key; two seals of one secret differ', () => {
    const [a, b] = [sealSecret(secret, key), sealSecret(secret, key)];
    expect(a).toMatch(/^v1:[\w-]{16}:[\w-]{22}:[\w-]+$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain(secret.slice('whsec_'.length));
    expect(openSecret(a, key)).toBe(secret);
    expect(openSecret(b, key)).toBe(secret);
  });

  test('a tampered value or the wrong key does not open', () => {
    const sealed = sealSecret(secret, key);
    const flip = (index: number) => {
      const parts = sealed.split(':');
      const bytes = Buffer.from(parts[index]!, 'base64url');
      bytes[0] = bytes[0]! ^ 1;
      parts[index] = bytes.toString('base64url');
      return parts.join(':');
    };
    expect(() => openSecret(flip(3), key)).toThrow(/altered, or WEBHOOK_SECRET_KEY is not the key/);
    expect(() => openSecret(flip(2), key)).toThrow(/altered/);
    expect(() => openSecret(flip(1), key)).toThrow(/altered/);
    expect(() => openSecret(sealed, randomBytes(32))).toThrow(/altered, or WEBHOOK_SECRET_KEY is not the key/);
    expect(() => openSecret(sealed.replace(/^v1/, 'v9'), key)).toThrow(/Not a sealed webhook secret/);
    expect(() => openSecret('whsec_plain', key)).toThrow(/Not a sealed webhook secret/);
  });

  test('production requires WEBHOOK_SECRET_KEY', () => {
    const stateDir = tempDir();
    expect(() => webhookKeyFrom(undefined, { production: true, stateDir })).toThrow(/requires WEBHOOK_SECRET_KEY/);
    expect(() => webhookKeyFrom('', { production: true, stateDir })).toThrow(/requires WEBHOOK_SECRET_KEY/);
    expect(readdirSync(stateDir)).toEqual([]);
  });

  test('the key may be given as hex or base64 of 32 bytes; anything else names the variable', () => {
    const options = { production: true, stateDir: tempDir() };
    expect(webhookKeyFrom(key.toString('hex'), options).equals(key)).toBe(true);
    expect(webhookKeyFrom(key.toString('base64'), options).equals(key)).toBe(true);
    expect(webhookKeyFrom(key.toString('base64url'), options).equals(key)).toBe(true);
    for (const bad of ['changeme', key.toString('hex').slice(1), randomBytes(16).toString('base64'), randomBytes(48).toString('base64')]) {
      expect(() => webhookKeyFrom(bad, options)).toThrow(/WEBHOOK_SECRET_KEY must be 32 bytes as 64 hex digits or base64/);
    }
  });

  test('outside production a key is generated once, kept with mode 0600, and read back after a restart', () => {
    const stateDir = path.join(tempDir(), 'state');
    const first = webhookKeyFrom(undefined, { production: false, stateDir });
    const file = path.join(stateDir, WEBHOOK_KEY_FILE);
    expect(first).toHaveLength(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(stateDir)).toEqual([WEBHOOK_KEY_FILE]); // no draft left behind
    const second = webhookKeyFrom(undefined, { production: false, stateDir });
    expect(second.equals(first)).toBe(true);
    expect(openSecret(sealSecret(secret, first), second)).toBe(secret);
  });

  test('a damaged key file is reported, never replaced', () => {
    const stateDir = tempDir();
    const file = path.join(stateDir, WEBHOOK_KEY_FILE);
    writeFileSync(file, 'garbage\n');
    expect(() => webhookKeyFrom(undefined, { production: false, stateDir })).toThrow(file);
    expect(readFileSync(file, 'utf8')).toBe('garbage\n');
  });
});

function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tessera-webhook-key-'));
  tempDirs.push(dir);
  return dir;
}

describe('backoff', () => {
  const fixed = (value: number) => () => value;
  const schedule = (random: () => number): number[] => {
    const delays: number[] = [];
    for (let retry = 1; ; retry += 1) {
      const delay = nextAttemptDelayMs(retry, random);
      if (delay === null) return delays;
      delays.push(delay);
    }
  };

  test('the first retry comes within 10 s', () => {
    for (const r of [0, 0.5, 0.999999]) expect(nextAttemptDelayMs(1, fixed(r))).toBeLessThanOrEqual(10_000);
    expect(nextAttemptDelayMs(1, fixed(0.999999))).toBeLessThanOrEqual(FIRST_RETRY_MS);
  });

  test.each([0, 0.5, 1])('with random fixed at %s the delays grow to the cap and span at least 24 h before giving up', (r) => {
    const delays = schedule(fixed(r));
    expect(delays).toHaveLength(MAX_RETRIES);
    delays.slice(1).forEach((delay, i) => expect(delay).toBeGreaterThanOrEqual(delays[i]!));
    expect(delays[1]!).toBeGreaterThan(delays[0]!);
    expect(Math.max(...delays)).toBeLessThanOrEqual(MAX_STEP_MS);
    const total = delays.reduce((sum, delay) => sum + delay, 0);
    expect(total).toBeGreaterThanOrEqual(GIVE_UP_AFTER_MS);
    expect(total).toBeLessThanOrEqual(2 * GIVE_UP_AFTER_MS + MAX_STEP_MS);
  });

  test('after the last retry the answer is null, and stays null', () => {
    expect(nextAttemptDelayMs(MAX_RETRIES, fixed(0.5))).not.toBeNull();
    expect(nextAttemptDelayMs(MAX_RETRIES + 1, fixed(0.5))).toBeNull();
    expect(nextAttemptDelayMs(10_000, fixed(0.5))).toBeNull();
    expect(() => nextAttemptDelayMs(0)).toThrow(RangeError);
  });

  test('an attempt\'s lease outlasts its timeout and ends well within 30 s of a restart', () => {
    expect(LEASE_MS).toBeGreaterThan(DELIVERY_TIMEOUT_MS);
    expect(LEASE_MS).toBeLessThan(30_000);
  });
});
