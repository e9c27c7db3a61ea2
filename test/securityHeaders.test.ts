// The pages a browser renders — GraphiQL (GET /graphql, /graphiql/*) and the console (/console) —
// come with a strict Content-Security-Policy, X-Content-Type-Options, Referrer-Policy and no framing;
// /metrics can be closed with METRICS_TOKEN. (In a real browser: test/e2e/securityHeaders.e2e.ts.)
import { createHash } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { ConfigError, loadConfig } from '../src/config';
import { tempDir } from './helpers/tempDirs';
import { startTestServer, type TestServer } from './helpers/testServer';

let server: TestServer;
let base: string;
let host: string;
beforeAll(async () => {
  server = await startTestServer();
  base = server.url.replace(/\/graphql$/, '');
  host = new URL(base).host;
});
afterAll(() => server?.stop());

const html = (url: string) => fetch(url, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });

/** The policy's directives by name: `script-src` → ["'self'", …]. */
function directives(csp: string | null): Map<string, string[]> {
  expect(csp).toEqual(expect.any(String));
  return new Map(
    csp!
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...sources]) => [name!, sources]),
  );
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** What every page, and every file it loads, is served with. */
function expectPageHeaders(res: Response): Map<string, string[]> {
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  expect(res.headers.get('x-frame-options')).toBe('DENY');
  const policy = directives(res.headers.get('content-security-policy'));
  expect(policy.get('default-src')).toEqual(["'self'"]);
  expect(policy.get('frame-ancestors')).toEqual(["'none'"]);
  expect(policy.get('base-uri')).toEqual(["'none'"]);
  expect(policy.get('object-src')).toEqual(["'none'"]);
  expect(policy.get('connect-src')).toEqual(["'self'", `ws://${host}`, `wss://${host}`]);
  expect(policy.get('script-src')![0]).toBe("'self'");
  expect(policy.get('style-src')![0]).toBe("'self'");
  // Scripts run from this server's files or by hash: never inline at large, never eval.
  for (const name of ['default-src', 'script-src', 'style-src', 'connect-src']) {
    expect(policy.get(name)!.filter((s) => /unsafe|\*|^data:|^https?:$/.test(s))).toEqual([]);
  }
  return policy;
}

describe('GraphiQL', () => {
  test('its page allows exactly its inline script, by the SHA-256 of the script, and its styles by a nonce of its own', async () => {
    const res = await html(server.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const policy = expectPageHeaders(res);
    const page = await res.text();
    const inline = [...page.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    expect(inline).toHaveLength(1);
    expect(policy.get('script-src')).toEqual(["'self'", sha256(inline[0]!)]);
    // Every <style> carries the nonce the policy names, and the script reads it for GraphiQL's dialogs.
    const nonce = /'nonce-([A-Za-z0-9+/=]+)'/.exec(policy.get('style-src')!.join(' '))![1]!;
    expect(policy.get('style-src')).toEqual(["'self'", `'nonce-${nonce}'`]);
    const styles = [...page.matchAll(/<style([^>]*)>/g)].map((m) => m[1]);
    expect(styles).toEqual([` id="graphiql-style" nonce="${nonce}"`]);
    expect(inline[0]).toContain("window.__webpack_nonce__ = document.getElementById('graphiql-style').nonce");
    expect(policy.get('img-src')).toEqual(["'self'", 'data:']);
    expect(policy.get('font-src')).toEqual(["'self'", 'data:']);
  });

  test('each page has a fresh nonce; the script, and so its hash, stays the same', async () => {
    const [a, b] = await Promise.all([html(server.url), html(server.url)]);
    const [pa, pb] = [directives(a.headers.get('content-security-policy')), directives(b.headers.get('content-security-policy'))];
    expect(pa.get('style-src')).not.toEqual(pb.get('style-src'));
    expect(pa.get('script-src')).toEqual(pb.get('script-src'));
  });

  test.each(['react.js', 'react-dom.js', 'graphiql.js', 'graphiql.css'])('/graphiql/%s is served with the same headers', async (file) => {
    const res = await fetch(`${base}/graphiql/${file}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(file.endsWith('.css') ? /^text\/css/ : /javascript/);
    expectPageHeaders(res);
  });

  test('GET /graphql asking for JSON is the API, not the page', async () => {
    const res = await fetch(`${server.url}?query=${encodeURIComponent('{ __typename }')}`, { headers: { accept: 'application/json', 'apollo-require-preflight': 'true' } });
    expect(res.headers.get('content-type')).toMatch(/^application\/(graphql-response\+)?json/);
  });
});

describe('the console', () => {
  test.each(['/console/', '/console/index.html', '/console/app.js', '/console/app.css'])('%s is served with the headers; only style attributes are allowed inline', async (file) => {
    const res = await html(`${base}${file}`);
    expect(res.status).toBe(200);
    const policy = expectPageHeaders(res);
    expect(policy.get('script-src')).toEqual(["'self'"]);
    expect(policy.get('style-src')).toEqual(["'self'"]);
    // The fill bars' widths are style="width: …%" attributes (console/src/views.ts).
    expect(policy.get('style-src-attr')).toEqual(["'unsafe-inline'"]);
  });

  test('its page has no inline script or style for the policy to refuse', async () => {
    const page = await (await html(`${base}/console/`)).text();
    expect(page).toMatch(/<script src="\/console\/app\.js"><\/script>/);
    expect(page).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(page).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
  });
});

test('a Host header that is not a host name never reaches the policy', async () => {
  const csp = await new Promise<string | undefined>((resolve, reject) => {
    const req = http.get(`${base}/console/`, { headers: { host: "evil.example; script-src 'unsafe-inline' *" } }, (res) => {
      res.resume();
      resolve(res.headers['content-security-policy'] as string | undefined);
    });
    req.on('error', reject);
  });
  const policy = directives(csp!);
  expect(policy.get('connect-src')).toEqual(["'self'"]);
  expect(policy.get('script-src')).toEqual(["'self'"]);
  expect(csp).not.toContain('evil');
});

describe('/metrics', () => {
  const TOKEN = 'metrics-token-0123456789abcdef';
  let guarded: TestServer;
  let guardedBase: string;
  beforeAll(async () => {
    guarded = await startTestServer({ config: { metricsToken: TOKEN } });
    guardedBase = guarded.url.replace(/\/graphql$/, '');
  });
  afterAll(() => guarded?.stop());

  const metrics = (root: string, authorization?: string) => fetch(`${root}/metrics`, { headers: authorization ? { authorization } : {} });

  test('without METRICS_TOKEN, /metrics stays open', async () => {
    const res = await metrics(base);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('tessera_claims_total');
  });

  test('with METRICS_TOKEN, /metrics answers Authorization: Bearer <token> only', async () => {
    const ok = await metrics(guardedBase, `Bearer ${TOKEN}`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await ok.text()).toContain('tessera_claims_total');
    expect((await metrics(guardedBase, `bearer ${TOKEN}`)).status).toBe(200);
  });

  test.each([
    ['no Authorization header', undefined],
    ['an empty bearer token', 'Bearer '],
    ['a wrong token', 'Bearer metrics-token-wrong'],
    ['a wrong token of the same length', `Bearer ${TOKEN.slice(0, -1)}X`],
    ['the token with more after it', `Bearer ${TOKEN}X`],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, 16)}`],
    ['the token without the Bearer scheme', TOKEN],
    ['the token as Basic credentials', `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`],
    ['the admin key', 'Bearer test-admin-key-0123456789'],
  ])('with METRICS_TOKEN, %s is answered 401 and no metrics', async (_label, authorization) => {
    const res = await metrics(guardedBase, authorization);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    const body = await res.text();
    expect(body).not.toContain('tessera_');
    expect(body).not.toContain(TOKEN);
  });

  test('a production server without METRICS_TOKEN keeps /metrics open and warns once at start-up; with it, no warning', async () => {
    const logged: { level: number; msg: string }[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) logged.push(JSON.parse(line));
        done();
      },
    });
    const open = await startTestServer({ config: { env: 'production' }, logger: pino({ level: 'info' }, sink) });
    try {
      expect((await metrics(open.url.replace(/\/graphql$/, ''))).status).toBe(200);
    } finally {
      await open.stop();
    }
    const warnings = logged.filter((l) => l.level === 40 && l.msg.includes('/metrics is open'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain('METRICS_TOKEN');
    logged.length = 0;
    const closed = await startTestServer({ config: { env: 'production', metricsToken: TOKEN }, logger: pino({ level: 'info' }, sink) });
    await closed.stop();
    expect(logged.filter((l) => l.msg.includes('/metrics is open'))).toEqual([]);
  });

  test('with METRICS_TOKEN, the health probes stay open', async () => {
    expect((await fetch(`${guardedBase}/healthz`)).status).toBe(200);
    expect((await fetch(`${guardedBase}/readyz`)).status).toBe(200);
  });
});

describe('METRICS_TOKEN', () => {
  const env = (extra: Record<string, string>) => ({
    EMBEDDED_PG_DIR: path.join(tempDir('tessera-config-'), 'pgdata'),
    ADMIN_API_KEY: 'a-long-enough-admin-key',
    ...extra,
  });

  test('unset or empty: /metrics is open', () => {
    expect(loadConfig(env({})).metricsToken).toBeUndefined();
    expect(loadConfig(env({ METRICS_TOKEN: '' })).metricsToken).toBeUndefined();
  });

  test('16 characters or more are taken', () => {
    expect(loadConfig(env({ METRICS_TOKEN: 'sixteen-chars-ok' })).metricsToken).toBe('sixteen-chars-ok');
  });

  test.each([
    ['too short', 'fifteen-chars-x'],
    ['with a space', 'a token with spaces in it'],
    ['with a non-ASCII character', 'metrics-tökén-0123456789'],
  ])('%s is refused at start-up with a message naming it', (_label, value) => {
    expect(() => loadConfig(env({ METRICS_TOKEN: value }))).toThrow(ConfigError);
    expect(() => loadConfig(env({ METRICS_TOKEN: value }))).toThrow(/METRICS_TOKEN must be at least 16 characters/);
  });
});
