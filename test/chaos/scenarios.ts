// The fault scenarios of `npm run chaos` (issue 3; g, webhooks, issue 15). Each runs a storm against a real Tessera
// process on a database of its own, injects its fault, retries every unknown outcome with its key
// until it is answered, and checks the history (history.ts). Sizes: `full` for npm run chaos,
// `quick` for the bounded subset in npm test.
import { randomBytes } from 'node:crypto';
import { isTransientDbError } from '../../src/db/pgErrors';
import { verifyCampaign } from '../../src/db/verifyCampaign';
import type { EmbeddedDatabase } from '../../src/db/embedded';
import { sealSecret } from '../../src/webhooks/secrets';
import { newWebhookSecret } from '../../src/webhooks/signature';
import { counterTotals, ticketCounts } from '../helpers/sql';
import { sleep, until } from '../helpers/time';
import { sendClaim } from './client';
import { checkHistory, History, idleInTransaction } from './history';
import { failoverAsync, failoverFrozen, failoverSwitchover, failoverSync, type FailoverFigures } from './failover';
import { FaultyReceiver } from './receiver';
import { gql } from './client';
import {
  ADMIN_KEY,
  citusNodesOf,
  closeCampaign,
  freePort,
  retryUnknowns,
  scenarioResult,
  scratchDatabase,
  ServerProcess,
  setUpCampaign,
  statsReader,
  storm,
  workerTerminator,
} from './harness';

export type Size = 'full' | 'quick';

export interface ScenarioEnv {
  /** A PostgreSQL server the scenarios create their databases on (admin URL). */
  pgUrl: string;
  /** A PostgreSQL the chaos run owns and may restart (scenario c); absent: c is skipped. */
  restartable?: EmbeddedDatabase;
  size: Size;
}

export interface ScenarioResult {
  id: string;
  name: string;
  skipped?: string;
  claims: number;
  ok: number;
  refused: number;
  unknown: number;
  retries: number;
  stored: number;
  total: number;
  available: number;
  violations: string[];
  notes: string[];
  seconds: number;
  /** The failover drill's figures (j–m). */
  failover?: FailoverFigures;
}

interface Plan {
  tickets: number;
  claims: number;
  concurrency: number;
}

const plan = (size: Size, full: Plan, quick: Plan): Plan => (size === 'full' ? full : quick);

/** Runs a scenario's body with a database and a server, then checks and tears down. */
async function run(
  id: string,
  name: string,
  env: ScenarioEnv,
  options: {
    pgUrl?: string;
    serverEnv?: Record<string, string>;
    tickets: number;
    prepare?: (sql: import('pg').Pool) => Promise<void>;
    /** More checks once every claim is answered: their violations join the history's. */
    check?: (ctx: { server: ServerProcess; sql: import('pg').Pool; campaignId: string; notes: string[] }) => Promise<string[]>;
  },
  body: (ctx: { server: ServerProcess; history: History; campaignId: string; partnerKeys: string[]; sql: import('pg').Pool; notes: string[] }) => Promise<void>,
): Promise<ScenarioResult> {
  const started = Date.now();
  const db = await scratchDatabase(options.pgUrl ?? env.pgUrl, id);
  const server = new ServerProcess(await freePort(), { DATABASE_URL: db.url, DATABASE_POOL_SIZE: '10', ...options.serverEnv });
  const notes: string[] = [];
  try {
    await options.prepare?.(db.sql);
    await server.start();
    const { campaignId, partnerKeys } = await setUpCampaign(server, options.tickets);
    const history = new History();
    const reader = statsReader(server, campaignId, history);
    try {
      await body({ server, history, campaignId, partnerKeys, sql: db.sql, notes });
    } finally {
      await reader.stop();
    }
    await retryUnknowns(server, history);
    const verdict = await checkHistory(history, db.sql, campaignId);
    if (options.check) verdict.violations.push(...(await options.check({ server, sql: db.sql, campaignId, notes })));
    const idle = await idleInTransaction(db.sql, db.name);
    if (idle > 0) verdict.violations.push(`${idle} server sessions left idle in transaction`);
    return scenarioResult({ id, name, history, verdict, violations: verdict.violations, notes, started });
  } catch (error) {
    throw new Error(`${id}: ${(error as Error).message}\n--- server log ---\n${server.log}`, { cause: error });
  } finally {
    await server.stop();
    await db.drop();
  }
}

/** No statement in flight on the server's pool and no request waiting for a connection (its /metrics). */
async function serverIdle(base: string): Promise<boolean> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const inUse = /^tessera_db_pool_connections\{state="in_use"\} (\d+)/m.exec(text);
  const waiting = /^tessera_db_pool_waiting (\d+)/m.exec(text);
  if (!inUse || !waiting) throw new Error('the pool gauges are missing from /metrics');
  return inUse[1] === '0' && waiting[1] === '0';
}

/**
 * a. SIGKILL of the server mid-storm, restart, retry the unknowns by key; close at 70%, while
 * tickets remain, so that "nothing allocated after close" is a real test.
 */
export function sigkill(env: ScenarioEnv): Promise<ScenarioResult> {
  const p = plan(env.size, { tickets: 1500, claims: 1800, concurrency: 48 }, { tickets: 200, claims: 240, concurrency: 24 });
  return run('a', 'SIGKILL of the server mid-storm, restart, retry by key', env, { tickets: p.tickets }, async (ctx) => {
    let fault: Promise<void> | null = null;
    let closing: Promise<void> | null = null;
    await storm({
      server: ctx.server,
      fixture: ctx,
      history: ctx.history,
      label: 'a',
      ...p,
      onSent: (sent) => {
        if (sent === Math.floor(p.claims * 0.3)) {
          fault = (async () => {
            await ctx.server.kill();
            ctx.notes.push(`killed after ${sent} claims sent`);
            await sleep(200); // the fault: the server stays down a moment
            await ctx.server.start();
          })();
        }
        if (sent === Math.floor(p.claims * 0.7)) closing = (fault ?? Promise.resolve()).then(() => closeCampaign(ctx.server, ctx.history, ctx.sql, ctx.campaignId));
      },
    });
    await fault;
    await closing;
    noteClose(ctx);
  });
}

/**
 * b. pg_terminate_backend of the server's connections, again and again, mid-storm; close at 70%. On
 * Citus (npm run test:citus) the workers' backends of the database too: the coordinator's
 * connections that run the claims routed there.
 */
export function terminateBackends(env: ScenarioEnv): Promise<ScenarioResult> {
  // On Citus the quick size is halved: each claim there waits out reconnections to the coordinator
  // and the workers, and 240 took 101 s of CI's 25 minutes on a slow machine (2026-12-07).
  const quick = citusNodesOf(env.pgUrl) ? { tickets: 100, claims: 120, concurrency: 24 } : { tickets: 200, claims: 240, concurrency: 24 };
  const p = plan(env.size, { tickets: 1500, claims: 1800, concurrency: 48 }, quick);
  return run('b', 'pg_terminate_backend of the server connections mid-storm', env, { tickets: p.tickets }, async (ctx) => {
    let terminated = 0;
    let onWorkers = 0;
    let round = 0;
    let stop = false;
    const database = (await ctx.sql.query('SELECT current_database() AS d')).rows[0].d;
    const nodes = citusNodesOf(env.pgUrl);
    const workers = nodes ? workerTerminator(nodes, database) : null;
    // The fault's cadence (real time on purpose): a round every 100-250 ms, the first after 100 ms.
    const killer = (async () => {
      await sleep(100);
      while (!stop) {
        // About half of the server's connections each round, every 100-250 ms: terminating all of
        // them every ~80 ms let a loaded machine (CI) spend minutes reconnecting — new connections
        // killed before their first claim — and the scenario outlasted its time limit.
        const { rows } = await ctx.sql.query(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
            WHERE datname = $1 AND application_name = 'tessera' AND pid <> pg_backend_pid() AND random() < 0.5`,
          [database],
        );
        terminated += rows[0].n;
        // On the workers a quarter, every third round: each one cuts a coordinator's connection that
        // a claim was routed through (half of them every round kept the run reconnecting for minutes).
        round += 1;
        if (workers && round % 3 === 0) onWorkers += await workers.terminate(0.25);
        await sleep(100 + Math.random() * 150);
      }
    })();
    let closing: Promise<void> | null = null;
    await storm({
      server: ctx.server,
      fixture: ctx,
      history: ctx.history,
      label: 'b',
      ...p,
      onSent: (sent) => {
        // A terminated connection can fail the close itself: closeCampaign retries like an operator.
        if (sent === Math.floor(p.claims * 0.7)) closing = closeCampaign(ctx.server, ctx.history, ctx.sql, ctx.campaignId);
      },
    });
    stop = true;
    await killer;
    await workers?.end();
    await closing;
    noteClose(ctx);
    ctx.notes.push(`${terminated} backends terminated${workers ? `, and ${onWorkers} on the Citus workers` : ''}; the same server process answered throughout`);
    if (workers && onWorkers === 0) throw new Error('no backend of the Citus workers was terminated: the fault did not happen');
    // Recovered without a restart: a fresh request on the same process succeeds.
    const health = await fetch(`${ctx.server.base}/readyz`);
    if (health.status !== 200) throw new Error(`server not ready after the terminations: ${health.status}`);
  });
}

/** c. PostgreSQL restarted mid-storm. */
export async function restartPostgres(env: ScenarioEnv): Promise<ScenarioResult> {
  const p = plan(env.size, { tickets: 400, claims: 1200, concurrency: 32 }, { tickets: 60, claims: 180, concurrency: 16 });
  const pg = env.restartable;
  if (!pg) {
    return { id: 'c', name: 'PostgreSQL restarted mid-storm', skipped: 'no PostgreSQL this run may restart', claims: 0, ok: 0, refused: 0, unknown: 0, retries: 0, stored: 0, total: 0, available: 0, violations: [], notes: [], seconds: 0 };
  }
  return run('c', 'PostgreSQL restarted mid-storm', env, { pgUrl: pg.url, tickets: p.tickets }, async (ctx) => {
    let fault: Promise<void> | null = null;
    await storm({
      server: ctx.server,
      fixture: ctx,
      history: ctx.history,
      label: 'c',
      ...p,
      onSent: (sent) => {
        if (sent === Math.floor(p.claims * 0.35)) {
          fault = (async () => {
            const t0 = Date.now();
            await pg.stop();
            await sleep(500); // the fault: PostgreSQL stays down a moment
            await pg.start();
            ctx.notes.push(`PostgreSQL down for ${Date.now() - t0} ms after ${sent} claims sent`);
          })();
        }
      },
    });
    await fault;
  });
}

/** d. Far more concurrent claims than connections: fail fast with 503 + Retry-After, never hang. */
export function poolExhaustion(env: ScenarioEnv): Promise<ScenarioResult> {
  const p = plan(env.size, { tickets: 300, claims: 1000, concurrency: 1000 }, { tickets: 100, claims: 300, concurrency: 300 });
  const serverEnv = { DATABASE_POOL_SIZE: '2', DATABASE_POOL_TIMEOUT_MS: '300', DATABASE_POOL_MAX_WAITING: '40' };
  return run('d', 'pool exhaustion: far more concurrent claims than connections', env, { tickets: p.tickets, serverEnv }, async (ctx) => {
    // The burst meets a stalled database: a session holds the campaign's gate exclusively for 1.5 s
    // (as a close would), so the claims that got the 2 connections wait on it and every other
    // request queues for a connection. Deterministic: exhaustion does not depend on timing.
    const blocker = await ctx.sql.connect();
    await blocker.query('BEGIN');
    await blocker.query('SELECT pg_advisory_xact_lock(1, hashtext($1::uuid::text))', [ctx.campaignId]);
    const release = sleep(1500).then(async () => { // the fault: a stall of 1.5 s
      await blocker.query('COMMIT');
      blocker.release();
    });
    // Every client fires once; the retries by key come after (retryUnknowns), so the first answers
    // show how the server copes with the burst.
    await storm({ server: ctx.server, fixture: ctx, history: ctx.history, label: 'd', ...p, timeoutMs: 20_000, inlineRetries: 1 });
    await release;
    const attempts = ctx.history.invocations.flatMap((inv) => inv.attempts.filter((a) => !a.retry));
    const slowest = Math.max(...attempts.map((a) => a.endedAt - a.startedAt));
    const unavailable = attempts.filter((a) => a.outcome.kind === 'unknown' && a.outcome.reason === 'http 503');
    const withRetryAfter = unavailable.filter((a) => a.outcome.kind === 'unknown' && a.outcome.retryAfter);
    const hung = attempts.filter((a) => a.outcome.kind === 'unknown' && a.outcome.reason !== 'http 503');
    ctx.notes.push(`pool of 2, database stalled 1.5 s, ${p.concurrency} claims at once: ${unavailable.length} answered 503 (${withRetryAfter.length} with Retry-After), slowest answer ${slowest} ms`);
    if (unavailable.length === 0) throw new Error('no request was refused: the pool was not exhausted');
    if (withRetryAfter.length !== unavailable.length) throw new Error('a 503 came without Retry-After');
    if (hung.length > 0) throw new Error(`${hung.length} requests got no answer (${hung[0]!.outcome.kind === 'unknown' ? hung[0]!.outcome.reason : ''})`);
    // The longest wait is bounded by the acquire timeout plus one statement, not by the queue.
    if (slowest > 10_000) throw new Error(`a request took ${slowest} ms: the pool queue is not bounded`);
  });
}

/** e. A claim whose transaction exceeds its timeout is rolled back; its ticket stays available. */
export function transactionTimeout(env: ScenarioEnv): Promise<ScenarioResult> {
  const p = plan(env.size, { tickets: 400, claims: 200, concurrency: 16 }, { tickets: 100, claims: 40, concurrency: 8 });
  const slow = env.size === 'full' ? 12 : 4;
  return run(
    'e',
    'a claim that exceeds its statement timeout is rolled back',
    env,
    {
      tickets: p.tickets,
      serverEnv: { DATABASE_STATEMENT_TIMEOUT_MS: '800' },
      // The fault, planted in this scenario's own database: inserting the allocation of a holder
      // listed in chaos.chaos_slow sleeps past the server's statement_timeout — after the claim has
      // taken and updated its ticket.
      // In a schema of its own (Tessera's migrator places every table of its schema on Citus, and
      // refuses one it does not know); on Citus (npm run test:citus) a reference table, so that the
      // trigger finds it on the worker where the allocation is inserted. One statement at a time.
      prepare: async (sql) => {
        const citus = citusNodesOf(env.pgUrl) !== null;
        const client = await sql.connect();
        try {
          if (citus) await client.query('SET citus.enable_unsafe_triggers = on');
          await client.query('CREATE SCHEMA chaos');
          await client.query('CREATE TABLE chaos.chaos_slow (holder text PRIMARY KEY)');
          if (citus) await client.query(`SELECT create_reference_table('chaos.chaos_slow')`);
          await client.query(`
            CREATE FUNCTION chaos_slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF EXISTS (SELECT 1 FROM chaos.chaos_slow WHERE holder = NEW.holder) THEN PERFORM pg_sleep(3); END IF;
              RETURN NEW;
            END $$`);
          await client.query('CREATE TRIGGER chaos_slow BEFORE INSERT ON allocations FOR EACH ROW EXECUTE FUNCTION chaos_slow_insert()');
        } finally {
          client.release();
        }
      },
    },
    async (ctx) => {
      const slowHolders = Array.from({ length: slow }, (_, i) => `e-slow-${i}`);
      await ctx.sql.query('INSERT INTO chaos.chaos_slow SELECT unnest($1::text[])', [slowHolders]);
      const before = await available(ctx.sql, ctx.campaignId);
      const slowClaims = slowHolders.map(async (holder, i) => {
        const request = { campaignId: ctx.campaignId, holder, metadata: { slow: true }, idempotencyKey: `e-slow-key-${i}` };
        const invocation = ctx.history.add(request, ctx.partnerKeys[0]!);
        const startedAt = Date.now();
        const outcome = await sendClaim(ctx.server.url, ctx.partnerKeys[0]!, request, { timeoutMs: 15_000 });
        invocation.attempts.push({ startedAt, endedAt: Date.now(), outcome, retry: false });
        return outcome;
      });
      // Ordinary claims run beside the slow ones and are not held up by them (SKIP LOCKED).
      await storm({ server: ctx.server, fixture: ctx, history: ctx.history, label: 'e', ...p });
      const outcomes = await Promise.all(slowClaims);
      const timedOut = outcomes.filter((o) => o.kind === 'unknown' && o.reason === 'http 503').length;
      const normalOk = ctx.history.invocations.filter((inv) => inv.request.holder.startsWith('e-holder') && History.last(inv)?.kind === 'ok').length;
      const after = await available(ctx.sql, ctx.campaignId);
      const slowStored = (await ctx.sql.query('SELECT count(*)::int AS n FROM allocations WHERE holder = ANY($1)', [slowHolders])).rows[0].n;
      ctx.notes.push(`${timedOut}/${slow} slow claims timed out (503); ${slowStored} of them stored; available ${before} → ${after} after ${normalOk} ordinary claims`);
      if (timedOut !== slow) throw new Error(`expected ${slow} timeouts, got ${timedOut}`);
      if (slowStored !== 0) throw new Error('a timed-out claim left an allocation');
      if (after !== before - normalOk) throw new Error(`available went ${before} → ${after} with ${normalOk} ordinary claims: a timed-out claim kept its ticket`);
      // Lift the fault; the retries by key (after this body) now succeed.
      await ctx.sql.query('DELETE FROM chaos.chaos_slow');
    },
  );
}

/** f. Clients that hang up mid-request, then replay with their key, get the same ticket. */
export function clientDisconnect(env: ScenarioEnv): Promise<ScenarioResult> {
  const p = plan(env.size, { tickets: 300, claims: 600, concurrency: 32 }, { tickets: 60, claims: 120, concurrency: 16 });
  return run('f', 'clients hang up mid-request, then replay with their key', env, { tickets: p.tickets }, async (ctx) => {
    await storm({
      server: ctx.server,
      fixture: ctx,
      history: ctx.history,
      label: 'f',
      ...p,
      // Half the clients hang up after 0-8 ms: before, during or after the server's commit.
      hangUpAfterMs: () => (Math.random() < 0.5 ? Math.random() * 8 : null),
    });
    // Let the server finish the requests whose clients left: nothing in flight on its pool.
    await until(() => serverIdle(ctx.server.base), { message: 'the server to finish the requests whose clients left', timeoutMs: 20_000, intervalMs: 20 });
    const hungUp = ctx.history.invocations.filter((inv) => inv.attempts[0]?.outcome.kind === 'unknown').length;
    const committed = (await ctx.sql.query(
      `SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND idempotency_key = ANY($2)`,
      [ctx.campaignId, ctx.history.invocations.filter((inv) => inv.attempts[0]?.outcome.kind === 'unknown').map((inv) => inv.request.idempotencyKey)],
    )).rows[0].n;
    ctx.notes.push(`${hungUp} clients hung up; the server had committed ${committed} of those claims anyway — each replay must return that ticket`);
  });
}

function noteClose(ctx: { history: History; notes: string[] }): void {
  const refusedAfter = ctx.history.invocations.filter((inv) => History.last(inv)?.kind === 'refused' && (History.last(inv) as { code: string }).code === 'CAMPAIGN_NOT_OPEN').length;
  ctx.notes.push(`closed mid-storm with ${ctx.history.closeAck?.storedAtAck} allocated; ${refusedAfter} later claims refused CAMPAIGN_NOT_OPEN`);
}

async function available(sql: import('pg').Pool, campaignId: string): Promise<number> {
  const { rows } = await sql.query(`SELECT count(*)::int AS n FROM tickets WHERE campaign_id = $1 AND status = 'AVAILABLE'`, [campaignId]);
  return rows[0].n;
}

/**
 * g. Webhooks under faults (docs/WEBHOOKS.md): an operator endpoint whose receiver is slow, answers
 * 500, never answers or hangs up at random, while the server is SIGKILLed with deliveries in flight
 * and PostgreSQL is restarted. Then the receiver heals, and the checker proves that every committed
 * allocation produced exactly one event id, that every event id reached the receiver at least once,
 * and that no event exists for an allocation that does not.
 */
export async function webhookFaults(env: ScenarioEnv): Promise<ScenarioResult> {
  const p = plan(env.size, { tickets: 600, claims: 800, concurrency: 32 }, { tickets: 120, claims: 160, concurrency: 16 });
  const name = 'webhooks: a faulty receiver, the server SIGKILLed and PostgreSQL restarted with deliveries in flight';
  const pg = env.restartable;
  if (!pg) {
    return { id: 'g', name, skipped: 'no PostgreSQL this run may restart', claims: 0, ok: 0, refused: 0, unknown: 0, retries: 0, stored: 0, total: 0, available: 0, violations: [], notes: [], seconds: 0 };
  }
  // The quick size (npm test) leaves out the answers that never come: each holds an attempt for the
  // full 10 s deadline, too long for a test that shares the machine with the rest of the suite.
  const receiver = await new FaultyReceiver({ slow: 0.05, error: 0.1, hang: env.size === 'full' ? 0.02 : 0, hangUp: 0.05 }).start();
  const key = randomBytes(32);
  try {
    return await run(
      'g',
      name,
      env,
      {
        pgUrl: pg.url,
        tickets: p.tickets,
        serverEnv: { WEBHOOK_SECRET_KEY: key.toString('base64') },
        prepare: async (sql) => {
          await sql.query('INSERT INTO webhook_endpoints (partner_id, url, events, secret_sealed) VALUES (NULL, $1, $2, $3)', [
            receiver.url,
            ['ALLOCATION_CREATED'],
            sealSecret(newWebhookSecret(), key),
          ]);
        },
        check: (ctx) => checkWebhooks(ctx, receiver, { timeoutMs: env.size === 'full' ? 120_000 : 90_000, healAt: env.size === 'full' ? 0.8 : 0.5 }),
      },
      async (ctx) => {
        let faults: Promise<void> = Promise.resolve();
        await storm({
          server: ctx.server,
          fixture: ctx,
          history: ctx.history,
          label: 'g',
          ...p,
          onSent: (sent) => {
            if (sent === Math.floor(p.claims * 0.4)) {
              faults = faults.then(async () => {
                await ctx.server.kill();
                await sleep(200);
                await ctx.server.start();
                ctx.notes.push(`server SIGKILLed after ${sent} claims sent`);
              });
            }
            if (sent === Math.floor(p.claims * 0.7)) {
              faults = faults.then(async () => {
                await pg.stop();
                await sleep(500);
                await pg.start();
                ctx.notes.push(`PostgreSQL restarted after ${sent} claims sent`);
              });
            }
          },
        });
        await faults;
        // The checks that follow query the restarted PostgreSQL from this process: wait until it answers.
        await until(async () => (await ctx.sql.query('SELECT 1').then(() => true, () => false)), { message: 'PostgreSQL to answer again', timeoutMs: 30_000, intervalMs: 200 });
      },
    );
  } finally {
    await receiver.stop();
  }
}

/** The webhook invariants, once the receiver has healed and the queue has drained. */
async function checkWebhooks(
  ctx: { sql: import('pg').Pool; campaignId: string; notes: string[] },
  receiver: FaultyReceiver,
  { timeoutMs, healAt }: { timeoutMs: number; healAt: number },
): Promise<string[]> {
  const violations: string[] = [];
  // The checker's own queries ride out the restarted PostgreSQL (a pooled connection it killed, a
  // server still coming back) as the server does: again, for a while.
  const query = async <R extends Record<string, unknown>>(text: string, values?: unknown[]) => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await ctx.sql.query<R>(text, values);
      } catch (error) {
        if (attempt >= 60 || !isTransientDbError(error)) throw error;
        await sleep(500);
      }
    }
  };
  const waited = Date.now();
  // The receiver stays faulty until a share (healAt) of the events has come at least once: the
  // faults meet the deliveries, not only the storm. Then it heals, and the rest must arrive by the
  // retry schedule.
  const committed = (await query<{ n: number }>('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [ctx.campaignId])).rows[0]!.n;
  await until(() => new Set(receiver.arrivals.map((a) => a.eventId)).size >= committed * healAt, {
    message: 'most events to reach the faulty receiver',
    timeoutMs: 60_000,
    intervalMs: 100,
  });
  receiver.heal();
  await until(
    async () =>
      (
        await query<{ done: boolean }>(
          `SELECT (SELECT count(*) FROM webhook_events) + (SELECT count(*) FROM webhook_deliveries WHERE status = 'PENDING') = 0 AS done`,
        )
      ).rows[0]!.done,
    { message: 'every webhook event drained and every delivery ended', timeoutMs, intervalMs: 250 },
  );
  const { rows: allocations } = await query<{ id: string; events: string[] | null; statuses: string[] | null }>(
    `SELECT a.id, array_agg(d.event_id::text) FILTER (WHERE d.id IS NOT NULL) AS events, array_agg(d.status::text) FILTER (WHERE d.id IS NOT NULL) AS statuses
       FROM allocations a LEFT JOIN webhook_deliveries d ON d.allocation_id = a.id AND d.event = 'ALLOCATION_CREATED'
      WHERE a.campaign_id = $1 GROUP BY a.id`,
    [ctx.campaignId],
  );
  const { rows: orphans } = await query(
    `SELECT d.event_id FROM webhook_deliveries d WHERE d.event = 'ALLOCATION_CREATED' AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.id = d.allocation_id)`,
  );
  const arrived = new Map<string, number>();
  for (const a of receiver.arrivals) arrived.set(a.eventId, (arrived.get(a.eventId) ?? 0) + 1);
  let lost = 0;
  for (const a of allocations) {
    const events = a.events ?? [];
    if (events.length !== 1) violations.push(`allocation ${a.id} has ${events.length} ALLOCATION_CREATED events`);
    if (a.statuses?.some((s) => s !== 'DELIVERED')) violations.push(`allocation ${a.id}'s delivery ended ${a.statuses.join(',')}`);
    for (const e of events) if (!arrived.has(e)) lost += 1;
  }
  if (lost > 0) violations.push(`${lost} event ids never reached the receiver`);
  if (orphans.length > 0) violations.push(`${orphans.length} events for allocations that do not exist (a claim that rolled back?)`);
  const repeats = [...arrived.values()].reduce((n, k) => n + k - 1, 0);
  const failedAnswers = receiver.arrivals.filter((a) => a.answered !== 200).length;
  // Acknowledged (200) more than once: allowed only where a crash cut an attempt off after the
  // receiver answered and before the delivery was recorded.
  const acknowledged = new Map<string, number>();
  for (const a of receiver.arrivals) if (a.answered === 200) acknowledged.set(a.eventId, (acknowledged.get(a.eventId) ?? 0) + 1);
  const duplicates = [...acknowledged.values()].filter((k) => k > 1).length;
  ctx.notes.push(
    `${allocations.length} allocations committed, ${allocations.length} events produced, ${arrived.size} event ids received ` +
      `(${receiver.arrivals.length} arrivals, ${failedAnswers} of them failed or unanswered, ${repeats} retries), ${duplicates} delivered twice, lost ${lost}; ` +
      `queue drained ${Math.round((Date.now() - waited) / 100) / 10} s after the storm`,
  );
  return violations;
}

/**
 * Terminates a share of the server's database connections every `pauseMs` (real time, on purpose)
 * until stopped; `stop()` answers how many it terminated.
 */
function terminating(sql: import('pg').Pool, o: { share: number; pauseMs: [number, number] }): { stop(): Promise<number> } {
  let stopped = false;
  let terminated = 0;
  const loop = (async () => {
    const database = (await sql.query('SELECT current_database() AS d')).rows[0].d;
    while (!stopped) {
      await sleep(o.pauseMs[0] + Math.random() * (o.pauseMs[1] - o.pauseMs[0]));
      const { rows } = await sql.query(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
          WHERE datname = $1 AND application_name = 'tessera' AND pid <> pg_backend_pid() AND random() < $2`,
        [database, o.share],
      );
      terminated += rows[0].n;
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return terminated;
    },
  };
}

/** SIGKILLs the server, notes it, and starts it again 200 ms later. */
async function sigkillAndRestart(ctx: { server: ServerProcess; notes: string[] }, sent: number): Promise<void> {
  await ctx.server.kill();
  ctx.notes.push(`server SIGKILLed after ${sent} claims sent`);
  await sleep(200);
  await ctx.server.start();
}

/**
 * h. An allotment lapses mid-storm while the server is SIGKILLed and its database connections are
 * terminated (issue 16): one partner's allotment of a third of the pool lapses 1.5 s into a storm by
 * three partners. The checker proves, besides the history's invariants (with `allotted` in the
 * identity), that no other partner took an allotted ticket before lapsesAt, and that the lapse was
 * written once, whole: size = what the owner drew + what the lapse returned.
 */
export function allotmentLapse(env: ScenarioEnv): Promise<ScenarioResult> {
  const p = plan(env.size, { tickets: 900, claims: 1200, concurrency: 32 }, { tickets: 150, claims: 200, concurrency: 16 });
  const size = Math.floor(p.tickets / 3);
  let owner = '';
  let lapsesAt = new Date();
  return run(
    'h',
    'an allotment lapses mid-storm: the server SIGKILLed and its connections terminated',
    env,
    {
      tickets: p.tickets,
      serverEnv: { HOLD_SWEEP_INTERVAL_MS: '200' },
      check: async (ctx) => {
        const violations: string[] = [];
        await until(async () => (await ctx.sql.query('SELECT lapsed_at FROM allotments WHERE partner_id = $1', [owner])).rows[0]?.lapsed_at, {
          message: 'the sweeper to write the lapse',
          timeoutMs: 30_000,
        });
        const early = (
          await ctx.sql.query(
            `SELECT count(*)::int AS n FROM allocations a JOIN tickets t ON t.campaign_id = a.campaign_id AND t.id = a.ticket_id
              WHERE a.campaign_id = $1 AND t.allotted_to = $2 AND a.partner_id <> $2 AND a.allocated_at < $3`,
            [ctx.campaignId, owner, lapsesAt],
          )
        ).rows[0].n;
        if (early > 0) violations.push(`${early} allotted tickets taken by other partners before lapsesAt`);
        const row = (
          await ctx.sql.query(
            `SELECT l.size, l.returned,
                    (SELECT count(*)::int FROM allocations a WHERE a.campaign_id = l.campaign_id AND a.partner_id = l.partner_id
                        AND a.from_allotment AND a.status IN ('ACTIVE', 'HELD')) AS drawn,
                    (SELECT count(*)::int FROM tickets t WHERE t.campaign_id = l.campaign_id AND t.status = 'ALLOTTED') AS still_allotted
               FROM allotments l WHERE l.campaign_id = $1 AND l.partner_id = $2`,
            [ctx.campaignId, owner],
          )
        ).rows[0];
        if (row.size !== size) violations.push(`the lapsed allotment records size ${row.size}, not ${size}`);
        if (row.drawn + row.returned !== size) violations.push(`drawn ${row.drawn} + returned ${row.returned} != size ${size}`);
        if (row.still_allotted !== 0) violations.push(`${row.still_allotted} tickets still ALLOTTED after the lapse`);
        ctx.notes.push(`allotment of ${size}: ${row.drawn} drawn by its partner, ${row.returned} returned at the lapse; ${early} taken early`);
        return violations;
      },
    },
    async (ctx) => {
      owner = (await ctx.sql.query("SELECT id FROM partners WHERE name = 'chaos-1'")).rows[0].id;
      lapsesAt = new Date(Date.now() + 1_500);
      await gql(ctx.server.url, ADMIN_KEY, 'mutation($c: ID!, $p: ID!, $n: Int!, $at: DateTime) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: $n, lapsesAt: $at) { id } }', {
        c: ctx.campaignId,
        p: owner,
        n: size,
        at: lapsesAt.toISOString(),
      });
      const killer = terminating(ctx.sql, { share: 0.3, pauseMs: [150, 350] });
      let fault: Promise<void> | null = null;
      await storm({
        server: ctx.server,
        fixture: ctx,
        history: ctx.history,
        label: 'h',
        ...p,
        onSent: (sent) => {
          if (sent === Math.floor(p.claims * 0.35)) fault = sigkillAndRestart(ctx, sent);
        },
      });
      await fault;
      const terminated = await killer.stop();
      ctx.notes.push(`${terminated} backends terminated`);
    },
  );
}

/**
 * i. Waitlist offers under faults (issue 16). Beside the claim storm (proved by the history checker
 * as in every scenario), a second, WAITLIST_FIRST campaign churns: sold out to one partner, whose
 * allocations are then released or held for a second and let lapse, while another partner's
 * holders join its waitlist, confirm some offers, let others expire and leave; a third partner's
 * allotment lapses and a fourth claims first come — and the server is SIGKILLed once and its
 * backends are terminated throughout. The checker proves on the waitlist campaign: no ticket live
 * twice, tickets and allocations and counters agree, nothing left RETURNED, no entry waiting while
 * a ticket is available, each entry's status agrees with its offer, and offers followed join order
 * (every entry that joined earlier was offered first, or had left before).
 */
export function waitlistOffers(env: ScenarioEnv): Promise<ScenarioResult> {
  const p = plan(env.size, { tickets: 600, claims: 800, concurrency: 24 }, { tickets: 100, claims: 150, concurrency: 12 });
  const seats = env.size === 'full' ? 120 : 30;
  let waitlistCampaign = '';
  // What the churn did and was acknowledged (calls cut off by a fault are counted apart).
  const counts = { released: 0, held: 0, joined: 0, confirmed: 0, left: 0, claimed: 0, failed: 0 };
  return run(
    'i',
    'waitlist offers and an allotment lapse: the server SIGKILLed and its connections terminated',
    env,
    {
      tickets: p.tickets,
      serverEnv: { HOLD_SWEEP_INTERVAL_MS: '200' },
      check: async (ctx) => {
        ctx.notes.push(
          `waitlist campaign of ${seats}: ${counts.released} releases, ${counts.held} lapsing holds, ${counts.joined} joins, ` +
            `${counts.confirmed} confirmations, ${counts.left} leaves, ${counts.claimed} first-come claims (${counts.failed} calls cut off by the faults)`,
        );
        return checkWaitlist(ctx.sql, waitlistCampaign, ctx.notes);
      },
    },
    async (ctx) => {
      const url = ctx.server.url;
      // chaos-0 sells out and returns; chaos-1 waits; chaos-2 holds an allotment and claims first come.
      const [seller, waiter, rival] = [ctx.partnerKeys[0]!, ctx.partnerKeys[1]!, ctx.partnerKeys[2]!];
      const { createCampaign } = await gql(
        url,
        ADMIN_KEY,
        'mutation { createCampaign(input: { name: "chaos waitlist", releasePolicy: WAITLIST_FIRST, waitlistOfferSeconds: 2 }) { campaign { id } } }',
      );
      waitlistCampaign = createCampaign.campaign.id;
      await gql(url, ADMIN_KEY, 'mutation($id: ID!, $n: Int!) { generateTickets(campaignId: $id, count: $n, prefix: "W-") { loaded } }', { id: waitlistCampaign, n: seats });
      await gql(url, ADMIN_KEY, 'mutation($id: ID!) { openCampaign(id: $id) { campaign { id } } }', { id: waitlistCampaign });
      const allotteeId = (await ctx.sql.query("SELECT id FROM partners WHERE name = 'chaos-2'")).rows[0].id;
      await gql(url, ADMIN_KEY, 'mutation($c: ID!, $p: ID!, $n: Int!, $at: DateTime) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: $n, lapsesAt: $at) { id } }', {
        c: waitlistCampaign,
        p: allotteeId,
        n: Math.floor(seats / 6),
        at: new Date(Date.now() + 2_500).toISOString(),
      });
      const call = async (key: string, query: string, variables: Record<string, unknown>) => {
        try {
          return await gql(url, key, query, variables, 5_000);
        } catch {
          counts.failed += 1; // cut off by a fault: the database decides what happened, and the checker reads it
          return null;
        }
      };
      const CLAIM_W = 'mutation($c: ID!, $h: String!) { claimTicket(input: { campaignId: $c, holder: $h }) { allocation { id } error { code } } }';
      for (let i = 0; i < seats; i += 1) await call(seller, CLAIM_W, { c: waitlistCampaign, h: `s${i}` });
      const randomRow = async (text: string) => (await ctx.sql.query(text, [waitlistCampaign])).rows[0] as { id: string } | undefined;
      let stop = false;
      let n = 0;
      const churn = async () => {
        while (!stop) {
          const i = n++;
          const roll = Math.random();
          // More taken than given back, so the pool keeps running dry and holders keep joining.
          if (roll < 0.2) {
            const a = await randomRow(`SELECT a.id FROM allocations a JOIN partners p ON p.id = a.partner_id AND p.name = 'chaos-0'
                                         WHERE a.campaign_id = $1 AND a.status = 'ACTIVE' ORDER BY random() LIMIT 1`);
            if (a && (await call(seller, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id } } }', { id: a.id }))?.releaseAllocation.allocation) {
              counts.released += 1;
            }
          } else if (roll < 0.45) {
            const joined = await call(waiter, 'mutation($c: ID!, $h: String!) { joinWaitlist(input: { campaignId: $c, holder: $h }) { entry { id } error { code } } }', {
              c: waitlistCampaign,
              h: `j${i}`,
            });
            if (joined?.joinWaitlist.error === null) counts.joined += 1;
          } else if (roll < 0.55) {
            // Confirm half the offers; the rest lapse after 2 s and pass on.
            const a = await randomRow(`SELECT a.id FROM allocations a WHERE a.campaign_id = $1 AND a.waitlist_entry_id IS NOT NULL
                                          AND a.status = 'HELD' AND a.expires_at > now() ORDER BY random() LIMIT 1`);
            if (a && Math.random() < 0.5 && (await call(waiter, 'mutation($id: ID!) { confirmHold(allocationId: $id) { allocation { id } } }', { id: a.id }))?.confirmHold.allocation) {
              counts.confirmed += 1;
            }
          } else if (roll < 0.65) {
            const held = await call(seller, 'mutation($c: ID!, $h: String!) { holdTicket(input: { campaignId: $c, holder: $h, ttlSeconds: 1 }) { allocation { id } } }', {
              c: waitlistCampaign,
              h: `l${i}`,
            });
            if (held?.holdTicket.allocation) counts.held += 1;
          } else if (roll < 0.95) {
            const claimed = await call(roll < 0.85 ? seller : rival, CLAIM_W, { c: waitlistCampaign, h: `r${i}` });
            if (claimed?.claimTicket.allocation) counts.claimed += 1;
          } else {
            const e = await randomRow(`SELECT w.id FROM waitlist_entries w WHERE w.campaign_id = $1 AND w.status IN ('WAITING', 'OFFERED') ORDER BY random() LIMIT 1`);
            if (e && (await call(waiter, 'mutation($id: ID!) { leaveWaitlist(entryId: $id) { entry { id } error { code } } }', { id: e.id }))?.leaveWaitlist.error === null) {
              counts.left += 1;
            }
          }
          await sleep(5 + Math.random() * 20);
        }
      };
      const churners = Array.from({ length: 6 }, churn);
      const killer = terminating(ctx.sql, { share: 0.3, pauseMs: [150, 400] });
      let fault: Promise<void> | null = null;
      await storm({
        server: ctx.server,
        fixture: ctx,
        history: ctx.history,
        label: 'i',
        ...p,
        onSent: (sent) => {
          if (sent === Math.floor(p.claims * 0.4)) fault = sigkillAndRestart(ctx, sent);
        },
      });
      await fault;
      await sleep(3_000); // the churn goes on past the allotment's lapse and a few offer lapses
      stop = true;
      const [terminated] = await Promise.all([killer.stop(), ...churners]);
      ctx.notes.push(`${terminated} backends terminated`);
    },
  );
}

/** The waitlist campaign's invariants, once every offer and hold has lapsed or been passed on. */
async function checkWaitlist(sql: import('pg').Pool, campaignId: string, notes: string[]): Promise<string[]> {
  const violations: string[] = [];
  // Settle: every hold lapses within 2 s and the sweeper passes it on within 200 ms. On Citus a
  // backend terminated between a distributed commit's PREPARE and COMMIT PREPARED leaves a prepared
  // transaction on a worker, holding its row locks until Citus's maintenance daemon recovers it
  // (citus.recover_2pc_interval, a minute by default): the sweeper's statements wait on them and time
  // out meanwhile (seen once in CI: the settle wait's 30 s ran out). There the wait lasts past one
  // recovery interval, and a failure says what the workers held.
  const citus = (await sql.query("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS c")).rows[0].c === true;
  try {
    await until(
      async () =>
        (
          await sql.query(
            `SELECT (SELECT count(*) FROM tickets WHERE campaign_id = $1 AND status = 'RETURNED')
                  + (SELECT count(*) FROM allocations WHERE campaign_id = $1 AND status = 'HELD' AND expires_at <= now() - interval '1 second')
                  + (SELECT count(*) FROM allotments WHERE campaign_id = $1 AND lapsed_at IS NULL) AS n`,
            [campaignId],
          )
        ).rows[0].n === '0',
      { message: 'the waitlist campaign to settle', timeoutMs: citus ? 90_000 : 30_000 },
    );
  } catch (error) {
    if (!citus) throw error;
    const held = await sql.query(
      `SELECT nodeport, result FROM run_command_on_workers($$SELECT count(*) || ' prepared, ' || (SELECT count(*) FROM pg_locks WHERE NOT granted) || ' lock waits' FROM pg_prepared_xacts$$)`,
    );
    throw new Error(`${(error as Error).message}; workers: ${held.rows.map((r) => `${r.nodeport}: ${r.result}`).join(', ')}`, { cause: error });
  }
  const { rows: twice } = await sql.query(
    `SELECT ticket_id FROM allocations WHERE campaign_id = $1 AND status IN ('HELD', 'ACTIVE') GROUP BY ticket_id HAVING count(*) > 1`,
    [campaignId],
  );
  if (twice.length > 0) violations.push(`waitlist campaign: ${twice.length} tickets live twice`);
  const { rows: mismatched } = await sql.query(
    `SELECT count(*)::int AS n FROM tickets t
       LEFT JOIN allocations a ON a.campaign_id = t.campaign_id AND a.ticket_id = t.id AND a.status IN ('ACTIVE', 'HELD')
      WHERE t.campaign_id = $1
        AND ((t.status IN ('AVAILABLE', 'VOID', 'ALLOTTED', 'RETURNED')) <> (a.id IS NULL)
          OR (t.status = 'ALLOCATED' AND a.status <> 'ACTIVE') OR (t.status = 'HELD' AND a.status <> 'HELD'))`,
    [campaignId],
  );
  if (mismatched[0].n > 0) violations.push(`waitlist campaign: ${mismatched[0].n} tickets disagree with their allocations`);
  const tickets = await ticketCounts(sql, campaignId);
  const counters = await counterTotals(sql, campaignId);
  // RETURNED: between a return and its offer (the next statement or sweep) — held, in the stats.
  if (tickets.allocated + tickets.held + tickets.returned + tickets.available + tickets.void + tickets.allotted !== tickets.total) {
    violations.push(`waitlist campaign: allocated + held + returned + available + void + allotted != total (${JSON.stringify(tickets)})`);
  }
  if (counters.allocated !== tickets.allocated || counters.held !== tickets.held || counters.total !== tickets.total) {
    violations.push(`waitlist campaign: counters ${JSON.stringify(counters)} against tickets ${JSON.stringify(tickets)}`);
  }
  for (const d of await verifyCampaign(sql, campaignId)) {
    violations.push(`waitlist campaign: verify: ${d.check}${d.subject ? ` ${d.subject}` : ''}: expected ${d.expected}, found ${d.found} (off by ${d.size})`);
  }
  const { rows: entries } = await sql.query<{ id: string; seq: string; status: string; offered_at: Date | null; ended_at: Date | null; offers: number; active: number; held: number; expired: number; released: number }>(
    `SELECT w.id, w.seq::text, w.status::text, w.offered_at, w.ended_at,
            count(a.id)::int AS offers,
            count(a.id) FILTER (WHERE a.status = 'ACTIVE')::int AS active,
            count(a.id) FILTER (WHERE a.status = 'HELD')::int AS held,
            count(a.id) FILTER (WHERE a.status = 'EXPIRED')::int AS expired,
            count(a.id) FILTER (WHERE a.status = 'RELEASED')::int AS released
       FROM waitlist_entries w
       LEFT JOIN allocations a ON a.campaign_id = w.campaign_id AND a.waitlist_entry_id = w.id
      WHERE w.campaign_id = $1
      GROUP BY w.campaign_id, w.id ORDER BY w.seq`,
    [campaignId],
  );
  const waiting = entries.filter((e) => e.status === 'WAITING').length;
  if (waiting > 0 && tickets.available > 0) violations.push(`waitlist campaign: ${waiting} entries wait while ${tickets.available} tickets are available`);
  for (const e of entries) {
    const wrong =
      (e.status === 'WAITING' && e.offers > 0) ||
      (e.status === 'OFFERED' && e.held === 0) ||
      (e.status === 'ACCEPTED' && (e.offers !== 1 || e.active + e.released !== 1 || e.expired > 0)) ||
      (e.status === 'EXPIRED' && e.expired === 0) ||
      e.offers > 1;
    if (wrong) violations.push(`waitlist entry ${e.id} is ${e.status} with ${JSON.stringify(e)}`);
  }
  // FIFO: every entry that joined before an offered one was offered no later, or had left before.
  const offered = entries.filter((e) => e.offered_at !== null);
  for (const e of offered) {
    for (const f of entries) {
      if (BigInt(f.seq) >= BigInt(e.seq)) break;
      const before = (f.offered_at !== null && f.offered_at <= e.offered_at!) || (f.offered_at === null && f.status === 'LEFT' && f.ended_at! <= e.offered_at!);
      if (!before) {
        violations.push(`waitlist entry ${f.id} (joined before ${e.id}) was neither offered before it nor gone`);
        break;
      }
    }
  }
  notes.push(
    `waitlist: ${entries.length} entries (${offered.length} offered: ${entries.filter((e) => e.status === 'ACCEPTED').length} accepted, ` +
      `${entries.filter((e) => e.status === 'EXPIRED').length} expired; ${entries.filter((e) => e.status === 'LEFT').length} left; ${waiting} waiting), ` +
      `final ${tickets.allocated} allocated, ${tickets.available} available`,
  );
  return violations;
}

export const SCENARIOS = [
  sigkill,
  terminateBackends,
  restartPostgres,
  poolExhaustion,
  transactionTimeout,
  clientDisconnect,
  webhookFaults,
  allotmentLapse,
  waitlistOffers,
  failoverSync,
  failoverAsync,
  failoverSwitchover,
  failoverFrozen,
];

/** Names `npm run chaos -- --only=` takes besides the letters. */
export const SCENARIO_GROUPS: Record<string, string[]> = { failover: ['j', 'k', 'l', 'm'] };

export function verdictLine(r: ScenarioResult): string {
  if (r.skipped) return `SKIP ${r.id}. ${r.name}: ${r.skipped}`;
  const status = r.violations.length === 0 ? 'PASS' : 'FAIL';
  return (
    `${status} ${r.id}. ${r.name}: ${r.claims} claims (first pass ${r.ok} ok, ${r.refused} refused, ${r.unknown} unknown), ` +
    `${r.retries} retries, ${r.stored}/${r.total} tickets allocated, ${r.violations.length} violations (${r.seconds} s)` +
    (r.notes.length ? `\n     ${r.notes.join('\n     ')}` : '') +
    (r.violations.length ? `\n     VIOLATION ${r.violations.slice(0, 10).join('\n     VIOLATION ')}` : '')
  );
}
