// A database server that stops answering without closing anything (SIGSTOP, a partition, a host
// powered off) is given up on (src/db/stallWatch.ts): no TCP reset ever arrives, so nothing but the
// server's own watch can end the wait. Proven here without Patroni, with a TCP proxy in front of
// PostgreSQL that can be frozen (test/helpers/freezableProxy.ts): once frozen it keeps every
// connection open, forwards nothing and accepts new connections it never answers.
//
// - Two hosts, `proxy,postgres` with target_session_attrs=read-write — the same server behind both,
//   as if the standby were promoted the instant the primary froze: under a stream of keyed claims
//   the server gives the frozen host up, claims are acknowledged again on the next host well within
//   30 s, no request waits past a bound, every failed claim retried with its key is answered, and
//   the database holds exactly the acknowledged allocations. /healthz says 503 "not answering"
//   while claims cannot be served, and 200 again once they can — never 200 before.
// - One host, the frozen one: claims fail fast (503 UNAVAILABLE), not hang; /healthz says 503 soon
//   after the freeze; once the server is back, /healthz says 200 again without any claim to clear
//   it, and the claims retried with their keys succeed.
import { Pool } from 'pg';
import { startFreezableProxy, type FreezableProxy } from './helpers/freezableProxy';
import { postGraphQL } from './helpers/graphql';
import { assertPoolInvariants, CLAIM, createTestDatabase, startTestServer, type ClaimPayload, type TestServer } from './helpers/testServer';
import { sleep, until } from './helpers/time';

/** No request may take longer than this (a claim, frozen database or not). */
const REQUEST_BOUND_MS = 15_000;
/** A client's pause before it retries a failed claim with its key. */
const RETRY_PAUSE_MS = 100;
/** A client's pause between two claims. */
const PACE_MS = 40;

interface Attempt {
  key: string;
  /** performance.now() when sent and when answered (or given up on). */
  sent: number;
  answered: number;
  outcome: 'ALLOCATED' | 'UNAVAILABLE' | 'TIMEOUT' | 'NETWORK' | 'OTHER';
  status?: number;
  allocationId?: string;
  detail?: string;
}

interface HealthSample {
  sent: number;
  answered: number;
  status: number | 'timeout' | 'error';
  database?: string;
}

/** One claim with its idempotency key (the holder is the key too), bounded by REQUEST_BOUND_MS. */
async function claim(server: TestServer, apiKey: string, campaignId: string, key: string): Promise<Attempt> {
  const sent = performance.now();
  try {
    const r = await postGraphQL<ClaimPayload>(server.url, apiKey, CLAIM, { input: { campaignId, holder: key, idempotencyKey: key } }, { timeoutMs: REQUEST_BOUND_MS });
    const answered = performance.now();
    const allocation = r.body.data?.claimTicket?.allocation;
    if (r.status === 200 && allocation) return { key, sent, answered, outcome: 'ALLOCATED', status: r.status, allocationId: allocation.id };
    const codes = r.body.errors?.map((e) => e.extensions?.code) ?? [];
    if (codes.length > 0 && codes.every((code) => code === 'UNAVAILABLE')) return { key, sent, answered, outcome: 'UNAVAILABLE', status: r.status };
    return { key, sent, answered, outcome: 'OTHER', status: r.status, detail: JSON.stringify(r.body) };
  } catch (error) {
    const outcome = (error as Error).name === 'TimeoutError' ? 'TIMEOUT' : 'NETWORK';
    return { key, sent, answered: performance.now(), outcome, detail: String(error) };
  }
}

/**
 * `loops` clients claiming one key after another, each key retried until it is acknowledged.
 * finish(): each client finishes its key, then stops. abandon(): each stops after its current
 * attempt; the keys left unacknowledged stay in `unanswered`.
 */
function claimStreams(server: TestServer, apiKey: string, campaignId: string, loops: number, name: string) {
  const attempts: Attempt[] = [];
  const acknowledged = new Map<string, string>(); // key -> allocation id
  const unanswered = new Set<string>();
  let mode: 'run' | 'finish' | 'abandon' = 'run';
  const now = () => mode; // read afresh after every await (the other side changes it meanwhile)
  let finishBy = Infinity;
  const loop = async (l: number) => {
    for (let n = 0; now() === 'run'; n += 1) {
      const key = `${name}-${l}-${n}`;
      unanswered.add(key);
      while (now() !== 'abandon' && performance.now() < finishBy) {
        const attempt = await claim(server, apiKey, campaignId, key);
        attempts.push(attempt);
        if (attempt.allocationId) {
          acknowledged.set(key, attempt.allocationId);
          unanswered.delete(key);
          break;
        }
        await sleep(RETRY_PAUSE_MS);
      }
      await sleep(PACE_MS);
    }
  };
  const running = Promise.all(Array.from({ length: loops }, (_, l) => loop(l)));
  return {
    attempts,
    acknowledged,
    unanswered,
    /** Every client answers its current key (giving up after `withinMs`), then stops. */
    async finish(withinMs = 60_000) {
      if (mode === 'run') mode = 'finish';
      finishBy = Math.min(finishBy, performance.now() + withinMs);
      await running;
    },
    async abandon() {
      mode = 'abandon';
      await running;
    },
  };
}

/** GET /healthz one after another, 200 ms apart, each recorded with its times. */
function pollHealth(graphqlUrl: string) {
  const url = graphqlUrl.replace(/\/graphql$/, '/healthz');
  const samples: HealthSample[] = [];
  let stopped = false;
  const running = (async () => {
    while (!stopped) {
      const sent = performance.now();
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
        const body = (await res.json()) as { database?: string };
        samples.push({ sent, answered: performance.now(), status: res.status, database: body.database });
      } catch (error) {
        samples.push({ sent, answered: performance.now(), status: (error as Error).name === 'TimeoutError' ? 'timeout' : 'error' });
      }
      await sleep(200);
    }
  })();
  return {
    samples,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/** When the server first reported the database given up on (db.unresponsive()), in performance.now() time. */
function watchGiveUp(server: TestServer) {
  const seen: { at: number | null } = { at: null };
  const timer = setInterval(() => {
    const unresponsive = server.db.unresponsive();
    if (unresponsive && seen.at === null) seen.at = performance.now() - (Date.now() - unresponsive.since);
  }, 20);
  return { seen, stop: () => clearInterval(timer) };
}

/** The direct URL's parts: where PostgreSQL listens, and the same URL with other hosts in its place. */
function parts(directUrl: string) {
  const url = new URL(directUrl);
  const userinfo = url.username ? `${url.username}${url.password ? `:${url.password}` : ''}@` : '';
  const params = url.searchParams;
  return {
    target: { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 5432) },
    hostPort: url.host,
    withHosts(hosts: string, extra: Record<string, string> = {}) {
      const query = new URLSearchParams(params);
      for (const [name, value] of Object.entries(extra)) query.set(name, value);
      const q = query.toString();
      return `${url.protocol}//${userinfo}${hosts}${url.pathname}${q ? `?${q}` : ''}`;
    },
  };
}

/** Every session of the server under test on its database comes through the proxy. */
async function expectAllThroughProxy(sql: Pool, proxy: FreezableProxy): Promise<number> {
  const { rows } = await sql.query<{ client_port: number }>(
    `SELECT client_port FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tessera'`,
  );
  const ports = new Set(proxy.upstreamPorts());
  expect(rows.length).toBeGreaterThan(0);
  expect(rows.filter((r) => !ports.has(r.client_port))).toEqual([]);
  return rows.length;
}

/** The database holds exactly the acknowledged allocations: one per acknowledged key, no ticket twice. */
async function expectExactlyAcknowledged(sql: Pool, campaignId: string, acknowledged: Map<string, string>): Promise<void> {
  const { rows } = await sql.query<{ id: string; idempotency_key: string }>('SELECT id, idempotency_key FROM allocations WHERE campaign_id = $1', [campaignId]);
  const stored = new Map(rows.map((r) => [r.id, r.idempotency_key]));
  const missing = [...acknowledged].filter(([key, id]) => stored.get(id) !== key);
  expect(missing).toEqual([]);
  expect(rows).toHaveLength(acknowledged.size);
  const stats = await assertPoolInvariants(sql, campaignId);
  expect(stats.allocated).toBe(acknowledged.size);
}

/**
 * A test database, a freezable proxy in front of its server, a Tessera test server whose DATABASE_URL
 * `hosts` makes of the proxy's port and the server's own host:port, and a direct pool for the checks;
 * all torn down after the describe block.
 */
function frozenSetUp(hosts: (url: ReturnType<typeof parts>, proxyPort: number) => string) {
  const it = {} as { database: { url: string; drop(): Promise<void> }; proxy: FreezableProxy; server: TestServer; sql: Pool };
  beforeAll(async () => {
    it.database = await createTestDatabase();
    it.sql = new Pool({ connectionString: it.database.url, max: 4 });
    it.sql.on('error', () => undefined);
    const url = parts(it.database.url);
    it.proxy = await startFreezableProxy(url.target);
    it.server = await startTestServer({ databaseUrl: hosts(url, it.proxy.port) });
  }, 60_000);
  afterAll(async () => {
    await it.proxy?.close();
    await it.server?.stop();
    await it.sql?.end();
    await it.database?.drop();
  });
  return it;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

describe('two hosts, the first one freezes', () => {
  const setUp = frozenSetUp((url, proxyPort) => url.withHosts(`127.0.0.1:${proxyPort},${url.hostPort}`, { target_session_attrs: 'read-write' }));

  test('claims are acknowledged on the next host well within 30 s, none waits past its bound, every acknowledged claim is stored once', async () => {
    const { server, sql, proxy } = setUp;
    const partner = await server.createPartner('Frozen');
    const campaignId = await server.openCampaignWith(3000);
    const health = pollHealth(server.url);
    const giveUp = watchGiveUp(server);
    const streams = claimStreams(server, partner.apiKey, campaignId, 8, 'two-hosts');
    let frozenAt = 0;
    let firstAck: Attempt;
    let healthyAgain: HealthSample;
    try {
      // Before: claims work, through the proxy.
      await until(() => streams.acknowledged.size >= 40, { message: '40 claims acknowledged before the freeze', timeoutMs: 30_000 });
      const sessions = await expectAllThroughProxy(sql, proxy);
      expect(proxy.accepted).toBeGreaterThan(0);

      // Right after a claim's statement went out (its parameters carry the key): a claim is
      // certainly in flight when the server freezes.
      await proxy.freezeAfterRequestWith('two-hosts-');
      frozenAt = performance.now();
      const forwarded = proxy.forwardedBytes;
      firstAck = await until(() => streams.attempts.find((a) => a.sent >= frozenAt && a.outcome === 'ALLOCATED'), {
        message: 'a claim sent after the freeze to be acknowledged',
        timeoutMs: 30_000,
        intervalMs: 20,
      });
      await sleep(3_000); // claims keep coming on the next host for a while: real time is the point
      await streams.finish();
      healthyAgain = await until(() => health.samples.find((s) => s.sent >= frozenAt && s.status === 200), {
        message: '/healthz to say 200 again',
        timeoutMs: 10_000,
      });
      expect(proxy.forwardedBytes).toBe(forwarded); // frozen: not one byte more

      const failed = streams.attempts.filter((a) => a.outcome !== 'ALLOCATED');
      const slowest = Math.max(...streams.attempts.map((a) => a.answered - a.sent));
      const afterFreeze = health.samples.filter((s) => s.sent >= frozenAt);
      // The /healthz in flight at the freeze counts too: it is answered after it, about the frozen server.
      const notAnswering = health.samples.filter((s) => s.answered > frozenAt && s.status === 503 && s.database === 'not answering' && s.answered <= firstAck.answered);
      console.info(
        [
          `frozen host given up on: ${giveUp.seen.at === null ? 'not caught by the 20 ms look (cleared at once)' : `${seconds(giveUp.seen.at - frozenAt)} after the freeze`}`,
          `first claim acknowledged after the freeze: ${seconds(firstAck.answered - frozenAt)} after it`,
          `/healthz: first 503 "not answering" ${notAnswering[0] ? seconds(notAnswering[0].answered - frozenAt) : 'never'} after the freeze, 200 again ${seconds(healthyAgain.answered - frozenAt)} after it`,
          `claims: ${streams.acknowledged.size} acknowledged keys, ${streams.attempts.length} attempts, ${failed.length} failed (${[...new Set(failed.map((a) => a.outcome))].join(', ') || 'none'}), slowest answer ${seconds(slowest)}`,
          `server sessions through the proxy before the freeze: ${sessions}; proxy connections accepted: ${proxy.accepted}`,
          `/healthz after the freeze (sent→answered, s): ${health.samples.filter((s) => s.answered > frozenAt).map((s) => `${seconds(s.sent - frozenAt)}→${seconds(s.answered - frozenAt)} ${s.status} ${s.database ?? ''}`).join('; ')}`,
          `failed claims (sent→answered, s): ${failed.map((a) => `${a.key} ${seconds(a.sent - frozenAt)}→${seconds(a.answered - frozenAt)} ${a.outcome}`).join('; ')}`,
        ].join('\n'),
      );

      // Claims again well within 30 s of the freeze.
      expect(firstAck.answered - frozenAt).toBeLessThan(20_000);
      // No request hung: every one was answered within its bound, and answered UNAVAILABLE (503) if it failed.
      expect(streams.attempts.filter((a) => a.outcome === 'TIMEOUT' || a.outcome === 'NETWORK' || a.outcome === 'OTHER')).toEqual([]);
      expect(failed.filter((a) => a.status !== 503)).toEqual([]);
      // The frozen server's claims were failed, not left waiting — then retried with their keys and answered.
      expect(failed.length).toBeGreaterThan(0);
      expect([...streams.unanswered]).toEqual([]);

      // /healthz: said 503 "not answering" while nothing could be claimed; never 200 before claims
      // worked again. 2 s of slack, not a tighter bound: the host list can move on before the stall
      // watch gives the host up (a new connection to it timing out after 5 s moves it too), and a
      // /healthz query on a new connection then finds the next host while the claims in flight
      // still wait for the watch (at most about a second more: the query was outstanding from the
      // freeze, so it is seen within 3 s and the probe fails 3 s later). That is no lie: new
      // requests work again. What is checked is that /healthz never said 200 in the ~5 s when
      // nothing could work.
      expect(notAnswering.length).toBeGreaterThan(0);
      expect(afterFreeze.filter((s) => s.status === 200 && s.answered < firstAck.answered - 2_000)).toEqual([]);
      expect(healthyAgain.answered - firstAck.answered).toBeLessThan(5_000);
      // No /healthz waited past its own bound (its probe's 3 s budget, and some).
      expect(health.samples.filter((s) => typeof s.status !== 'number' || s.answered - s.sent > 5_000)).toEqual([]);
    } finally {
      giveUp.stop();
      await streams.abandon();
      await health.stop();
    }

    // Every acknowledged allocation is stored, once; no ticket allocated twice.
    await expectExactlyAcknowledged(sql, campaignId, streams.acknowledged);
  }, 120_000);
});

describe('one host, and it freezes', () => {
  const setUp = frozenSetUp((url, proxyPort) => url.withHosts(`127.0.0.1:${proxyPort}`));

  test('claims fail fast with 503 UNAVAILABLE, /healthz says 503, and both work again once the server is back', async () => {
    const { server, sql, proxy } = setUp;
    const partner = await server.createPartner('Frozen alone');
    const campaignId = await server.openCampaignWith(1000);
    const health = pollHealth(server.url);
    const streams = claimStreams(server, partner.apiKey, campaignId, 4, 'one-host');
    let frozenAt = 0;
    let thawedAt = 0;
    let duringFreeze: Attempt[];
    let sentDuringFreeze: Attempt[];
    try {
      await until(() => streams.acknowledged.size >= 20, { message: '20 claims acknowledged before the freeze', timeoutMs: 30_000 });
      await expectAllThroughProxy(sql, proxy);

      await proxy.freezeAfterRequestWith('one-host-'); // with a claim's statement in flight, as above
      frozenAt = performance.now();
      await sleep(12_000); // the server stays frozen a while: real time is the point
      await streams.abandon();
      duringFreeze = streams.attempts.filter((a) => a.answered > frozenAt);
      sentDuringFreeze = duringFreeze.filter((a) => a.sent >= frozenAt);
      const healthDuringFreeze = health.samples.filter((s) => s.sent >= frozenAt);

      // Back: the connections held frozen are gone (as after a restart), new ones are served.
      thawedAt = performance.now();
      proxy.thaw();
      // /healthz recovers by itself, with no claim to clear the "not answering" state.
      const healthyAgain = await until(() => health.samples.find((s) => s.sent >= thawedAt && s.status === 200), {
        message: '/healthz to say 200 after the thaw, with no claims coming',
        timeoutMs: 15_000,
      });
      // Every key left unanswered during the freeze, retried: answered now.
      const retried: Attempt[] = [];
      for (const key of [...streams.unanswered]) {
        const attempt = await until(
          async () => {
            const a = await claim(server, partner.apiKey, campaignId, key);
            retried.push(a);
            return a.allocationId ? a : null;
          },
          { message: `the claim with key ${key} to be acknowledged after the thaw`, timeoutMs: 15_000, intervalMs: RETRY_PAUSE_MS },
        );
        streams.acknowledged.set(key, attempt.allocationId!);
        streams.unanswered.delete(key);
      }

      const firstNotOk = healthDuringFreeze.find((s) => s.status === 503);
      const slowest = Math.max(...duringFreeze.map((a) => a.answered - Math.max(a.sent, frozenAt)));
      console.info(
        [
          `one frozen host: ${sentDuringFreeze.length} claims sent during the 12 s freeze, ${duringFreeze.length} answered during it, outcomes ${[...new Set(duringFreeze.map((a) => `${a.outcome}/${a.status ?? '-'}`))].join(', ')}, slowest ${seconds(slowest)} (counted from the freeze)`,
          `/healthz: first 503 ${firstNotOk ? `("${firstNotOk.database}") ${seconds(firstNotOk.answered - frozenAt)} after the freeze` : 'never'}, 200 again ${seconds(healthyAgain.answered - thawedAt)} after the thaw`,
          `keys retried after the thaw: ${retried.length} attempts for ${new Set(retried.map((a) => a.key)).size} keys, ${retried.filter((a) => !a.allocationId).length} failed`,
          `/healthz during the freeze (sent→answered, s): ${healthDuringFreeze.map((s) => `${seconds(s.sent - frozenAt)}→${seconds(s.answered - frozenAt)} ${s.status} ${s.database ?? ''}`).join('; ')}`,
          `claims during the freeze (sent→answered, s): ${duringFreeze.map((a) => `${a.key} ${seconds(a.sent - frozenAt)}→${seconds(a.answered - frozenAt)} ${a.outcome}`).join('; ')}`,
        ].join('\n'),
      );

      // /healthz said 503 within 10 s of the freeze, and never 200 while frozen.
      expect(firstNotOk).toBeDefined();
      expect(firstNotOk!.answered - frozenAt).toBeLessThan(10_000);
      expect(healthDuringFreeze.filter((s) => s.status === 200)).toEqual([]);
      expect(health.samples.filter((s) => typeof s.status !== 'number' || s.answered - s.sent > 5_000)).toEqual([]);
    } finally {
      await streams.abandon();
      await health.stop();
    }

    expect(streams.unanswered.size).toBe(0);
    await expectExactlyAcknowledged(sql, campaignId, streams.acknowledged);

    // Claims failed fast (checked last, so that the rest is checked whatever this finds): every
    // claim in the freeze was answered within 10 s of being sent — or of the freeze, for the one
    // whose statement was in flight then — those sent during it 503 UNAVAILABLE, and each of the 4
    // clients got answers during the freeze.
    expect(duringFreeze.filter((a) => a.answered - Math.max(a.sent, frozenAt) >= 10_000)).toEqual([]);
    expect(sentDuringFreeze.filter((a) => a.outcome !== 'UNAVAILABLE' || a.status !== 503)).toEqual([]);
    expect(duringFreeze.filter((a) => a.outcome !== 'UNAVAILABLE' && a.outcome !== 'ALLOCATED')).toEqual([]);
    expect(sentDuringFreeze.length).toBeGreaterThanOrEqual(4);
  }, 120_000);
});
