// j–m. The failover drill (issue 19) on a real Patroni cluster (test/chaos/patroni.ts): one etcd,
// two PostgreSQL nodes each under its own Patroni, replicating over a link of LINK_DELAY_MS each
// way. Two Tessera instances take a claim storm; their DATABASE_URL lists both nodes with
// target_session_attrs=read-write (src/db/hosts.ts), and nobody restarts or reconfigures them.
// Mid-storm the drill injects a fault and Patroni — not the drill — elects and promotes:
//
// - j: the leader's host dies (its Patroni and PostgreSQL SIGKILLed at once), synchronous_mode on:
//   every acknowledged claim must survive — 0 lost, 0 duplicated, every unknown outcome resolved by
//   its idempotency key, and every other invariant of the history checker (verifyCampaign too);
// - k: the same with synchronous_mode off: what asynchronous replication loses (claims the leader
//   acknowledged whose WAL had not reached the other node) and what follows from it (a lost ticket
//   handed out again) is counted, not a violation; every other invariant must still hold;
// - l: a planned switchover (`patronictl switchover`) under a steady load, asynchronous: 0 lost, and
//   no error but UNAVAILABLE (503 with Retry-After), which the clients retry;
// - m: the leader freezes (Patroni, the postmaster and every backend SIGSTOPped: its connections stay
//   open and silent, as a powered-off or cut-off host's do), synchronous_mode on: Patroni promotes the
//   other node, and claims must be acknowledged again within FROZEN_TARGET_MS of the promotion, with
//   0 lost and every unknown resolved by key. Then the frozen node is SIGKILLed.
//
// Each reports claims, acknowledged, lost, duplicated, unknown outcomes and how many were resolved,
// the time from the fault to the promotion as Patroni recorded it (GET /history), and from the fault
// to the first claim acknowledged after the promotion on each instance (the slower).
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import { migrate } from '../../src/db/migrate';
import { sleep } from '../helpers/time';
import { sendClaim, type ClaimRequest, type Outcome } from './client';
import { checkHistory, History, type Invocation } from './history';
import { freePort, retryUnknowns, scenarioResult, ServerProcess, setUpCampaign, statsReader, storm, type Fixture } from './harness';
import { LINK_DELAY_MS, PATRONI_DCS, startPatroniCluster, type PatroniCluster } from './patroni';
import type { ScenarioEnv, ScenarioResult } from './scenarios';

export type Fault = 'kill' | 'freeze' | 'switchover';

export interface FailoverFigures {
  fault: Fault;
  replication: 'synchronous' | 'asynchronous';
  claims: number;
  /** Claims answered with an allocation (at any attempt). */
  acknowledged: number;
  /** Acknowledged allocations the new leader does not have. */
  lost: number;
  /** Tickets acknowledged to more than one claim, or with two live allocations. */
  duplicated: number;
  /** Claims that met an unknown outcome (timeout, reset, 503) and how many of them ended answered. */
  unknown: number;
  unknownResolved: number;
  /** Attempts answered otherwise than with a ticket, SOLD_OUT/ALL_HELD or UNAVAILABLE (503 with Retry-After). */
  otherErrors: number;
  /** The fault to the new leader's promotion, as Patroni recorded it. */
  promoteMs: number;
  /** The fault to the first claim acknowledged after the promotion, on each instance (the slower); null: never. */
  recoverMs: number | null;
  /** The promotion to that claim. */
  afterPromotionMs: number | null;
  /** The longest time an instance acknowledged no claim across the promotion (the slower). */
  pauseMs: number | null;
  /** What ran: Patroni, etcd and PostgreSQL versions and settings. */
  setup: string;
}

/** Frozen leader (m): claims must be acknowledged again within this long after Patroni's promotion. */
export const FROZEN_TARGET_MS = 30_000;

interface Spec {
  id: string;
  name: string;
  fault: Fault;
  synchronous: boolean;
}

export const failoverSync = (env: ScenarioEnv) =>
  drill({ id: 'j', fault: 'kill', synchronous: true, name: "failover (Patroni): the leader's Patroni and PostgreSQL SIGKILLed mid-storm, synchronous_mode on, two instances" }, env);
export const failoverAsync = (env: ScenarioEnv) =>
  drill({ id: 'k', fault: 'kill', synchronous: false, name: "failover (Patroni): the leader's Patroni and PostgreSQL SIGKILLed mid-storm, synchronous_mode off, two instances" }, env);
export const failoverSwitchover = (env: ScenarioEnv) =>
  drill({ id: 'l', fault: 'switchover', synchronous: false, name: 'failover (Patroni): planned switchover (patronictl switchover) under a steady load, synchronous_mode off, two instances' }, env);
export const failoverFrozen = (env: ScenarioEnv) =>
  drill({ id: 'm', fault: 'freeze', synchronous: true, name: "failover (Patroni): the leader frozen mid-storm (its Patroni and PostgreSQL SIGSTOPped), synchronous_mode on, two instances" }, env);

interface Plan {
  tickets: number;
  claims: number;
  concurrency: number;
  /** Claims per second per instance (a steady load, so that a switchover happens under it); unset: as fast as answered. */
  perSecond?: number;
  /** The fault comes once instance 0 has sent this share of its claims. */
  faultAt: number;
}

function plan(spec: Spec, env: ScenarioEnv): Plan {
  const full = env.size === 'full';
  // npm test's size is small: two PostgreSQL nodes, two Patroni, etcd and two Tessera processes
  // already load the two cores that run the other test files beside this one.
  if (spec.fault === 'switchover') {
    // At full speed the storm would be over before patronictl has even started (about 1 s): a
    // steady rate keeps claims coming before, during and after the switchover (2–3 s).
    return full ? { tickets: 1500, claims: 1800, concurrency: 24, perSecond: 75, faultAt: 0.3 } : { tickets: 400, claims: 320, concurrency: 8, perSecond: 20, faultAt: 0.25 };
  }
  return full ? { tickets: 1500, claims: 1800, concurrency: 48, faultAt: 0.4 } : { tickets: 150, claims: 200, concurrency: 16, faultAt: 0.4 };
}

async function drill(spec: Spec, env: ScenarioEnv): Promise<ScenarioResult> {
  const { id, name } = spec;
  const p = plan(spec, env);
  const started = Date.now();
  const start = await startPatroniCluster({ synchronous: spec.synchronous, linkDelayMs: LINK_DELAY_MS });
  if (!start.cluster) return { id, name, skipped: start.skipped, claims: 0, ok: 0, refused: 0, unknown: 0, retries: 0, stored: 0, total: 0, available: 0, violations: [], notes: [], seconds: 0 };
  const cluster = start.cluster;
  const servers: ServerProcess[] = [];
  const notes: string[] = [];
  let sql: Pool | null = null;
  try {
    const leader = (await cluster.waitForLeader()).name;
    const other = cluster.nodes.find((n) => n.name !== leader)!.name;
    const database = `tessera_chaos_${id}_${randomBytes(3).toString('hex')}`;
    const admin = new Pool({ connectionString: cluster.node(leader).url, max: 1 });
    await admin.query(`CREATE DATABASE "${database}"`);
    await admin.end();
    await migrate(withDatabase(cluster.node(leader).url, database));
    for (let i = 0; i < 2; i += 1) {
      servers.push(new ServerProcess(await freePort(), { DATABASE_URL: withDatabase(cluster.url, database), DATABASE_POOL_SIZE: '10' }));
      await servers[i]!.start();
    }
    const fixture = await setUpCampaign(servers[0]!, p.tickets);
    const history = new History();
    const reader = statsReader(servers[1]!, fixture.campaignId, history);
    const t: Timeline = { faultAt: 0, promotedAt: 0, newLeader: '', killedFrozenAt: 0 };
    let fault: Promise<void> | null = null;
    let stormsDone = false;
    const half = Math.floor(p.claims / 2);
    try {
      await Promise.all(
        servers.map((server, i) =>
          drive({
            server,
            fixture,
            history,
            label: `${id}${i}`,
            claims: i === 0 ? half : p.claims - half,
            concurrency: p.concurrency / 2,
            perSecond: p.perSecond,
            onSent: (sent) => {
              if (i !== 0 || sent !== Math.floor(half * p.faultAt)) return;
              notes.push(`${describeFault(spec.fault, leader)} after ${sent * 2} claims sent`);
              fault = inject(spec.fault, cluster, leader, other, history, id, t, () => stormsDone, notes);
              fault.catch(() => undefined); // awaited below, after the storms; not an unhandled rejection meanwhile
            },
          }),
        ),
      );
      stormsDone = true;
      if (!fault) throw new Error('the fault was never injected');
      await fault;
    } finally {
      stormsDone = true;
      await reader.stop();
    }
    // The clients retry whatever is still unknown, on either instance.
    await retryUnknowns(servers[0]!, history);
    sql = new Pool({ connectionString: withDatabase(cluster.node(t.newLeader || leader).url, database), max: 4 });
    sql.on('error', () => undefined);
    const verdict = await checkHistory(history, sql, fixture.campaignId);
    const figures = await measure(spec, history, sql, fixture.campaignId, t, cluster);
    // Asynchronous replication loses what the other node had not received; that, and what follows
    // from it, is the figure this drill reports. Anything else is a violation in every scenario.
    const expected = !spec.synchronous && figures.lost > 0 ? verdict.violations.filter(followsFromLoss) : [];
    const violations = verdict.violations.filter((v) => !expected.includes(v));
    if ((spec.synchronous || spec.fault === 'switchover') && (figures.lost > 0 || figures.duplicated > 0)) {
      violations.push(`${figures.lost} acknowledged claims lost, ${figures.duplicated} tickets acknowledged twice (${spec.synchronous ? 'synchronous_mode on' : 'a planned switchover'})`);
    }
    if (figures.unknownResolved !== figures.unknown) violations.push(`${figures.unknown - figures.unknownResolved} unknown outcomes never resolved`);
    if (spec.fault === 'switchover' && figures.otherErrors > 0) violations.push(`${figures.otherErrors} attempts failed otherwise than with UNAVAILABLE during a planned switchover: ${otherErrorReasons(history)}`);
    if (spec.fault === 'freeze') {
      // Acknowledged after the kill does not count: the target is while the old leader is still frozen.
      const late = recoveries(history, id, t.promotedAt).filter((r) => r === null || r > t.killedFrozenAt || r - t.promotedAt > FROZEN_TARGET_MS);
      if (late.length > 0) violations.push(`claims not acknowledged again within ${FROZEN_TARGET_MS / 1000} s of the promotion on ${late.length} of 2 instances while the old leader was frozen (${frozenSummary(history, id, t)})`);
    }
    notes.push(
      `Patroni promoted ${t.newLeader} ${figures.promoteMs} ms after the fault; ` +
        (figures.recoverMs === null
          ? 'claims never acknowledged again on one instance'
          : `claims acknowledged again after ${figures.recoverMs} ms (${figures.afterPromotionMs} ms after the promotion; no claim acknowledged for ${figures.pauseMs} ms)`),
      `${figures.acknowledged} acknowledged, ${figures.lost} lost, ${figures.duplicated} duplicated, ${figures.unknownResolved}/${figures.unknown} unknown resolved; ` +
        `${figures.otherErrors} attempts failed otherwise than with UNAVAILABLE${figures.otherErrors ? ` (${otherErrorReasons(history)})` : ''}`,
    );
    if (spec.fault === 'freeze') notes.push(frozenSummary(history, id, t));
    if (expected.length > 0) notes.push(`expected with asynchronous replication: ${expected.length} checker findings that follow from the ${figures.lost} lost claims (first: ${expected[0]})`);
    return { ...scenarioResult({ id, name, history, verdict, violations, notes, started }), failover: figures };
  } catch (error) {
    throw new Error(`${id}: ${(error as Error).message}\n--- Tessera logs ---\n${servers.map((s) => s.log).join('\n---\n')}\n${cluster.log()}`, { cause: error });
  } finally {
    // The cluster first: with nothing left to wait for, the instances stop at once.
    await cluster.stop().catch((error: unknown) => console.warn(`${id}: ${(error as Error).message}`));
    for (const server of servers) await server.stop();
    await sql?.end().catch(() => undefined);
  }
}

interface Timeline {
  faultAt: number;
  /** When Patroni promoted the new leader (its /history), else when its REST API first named it. */
  promotedAt: number;
  newLeader: string;
  /** m: when the frozen node was SIGKILLed. */
  killedFrozenAt: number;
}

function describeFault(fault: Fault, leader: string): string {
  if (fault === 'kill') return `leader ${leader}'s Patroni and PostgreSQL SIGKILLed`;
  if (fault === 'freeze') return `leader ${leader}'s Patroni and PostgreSQL SIGSTOPped`;
  return `patronictl switchover from ${leader} started`;
}

/** The fault, then what Patroni does about it; fills `t`. */
async function inject(fault: Fault, cluster: PatroniCluster, leader: string, other: string, history: History, id: string, t: Timeline, stormsDone: () => boolean, notes: string[]): Promise<void> {
  t.faultAt = Date.now();
  if (fault === 'kill') await cluster.kill(leader);
  else if (fault === 'freeze') await cluster.freeze(leader);
  else notes.push(`patronictl: ${(await cluster.switchover(leader, other)).split('\n').find((l) => /switched over|switchover/i.test(l))?.trim() ?? 'done'}`);
  const next = await cluster.waitForLeader({ not: leader, timeoutMs: 120_000 });
  t.newLeader = next.name;
  t.promotedAt = (await cluster.promotedAt(next.name)) ?? next.seenAt;
  if (fault !== 'freeze') return;
  // The target: every instance acknowledges a claim within FROZEN_TARGET_MS of the promotion, while
  // the old leader is still frozen (the storm ending first also ends the wait). Then it is killed.
  while (!stormsDone() && Date.now() < t.promotedAt + FROZEN_TARGET_MS && recoveries(history, id, t.promotedAt).some((r) => r === null)) await sleep(100);
  t.killedFrozenAt = Date.now();
  await cluster.kill(leader);
}

/** On each instance, when the first claim acknowledged at or after `since` was answered (null: none yet). */
function recoveries(history: History, id: string, since: number): (number | null)[] {
  return ['0', '1'].map((i) => {
    let first: number | null = null;
    for (const inv of history.invocations) {
      if (!inv.request.holder.startsWith(`${id}${i}-`)) continue;
      for (const a of inv.attempts) if (a.outcome.kind === 'ok' && a.endedAt >= since && (first === null || a.endedAt < first)) first = a.endedAt;
    }
    return first;
  });
}

function frozenSummary(history: History, id: string, t: Timeline): string {
  const promoted = recoveries(history, id, t.promotedAt);
  const afterKill = recoveries(history, id, t.killedFrozenAt);
  const parts = promoted.map((r, i) => {
    if (r !== null && r <= t.killedFrozenAt) return `instance ${i}: acknowledged again ${r - t.promotedAt} ms after the promotion`;
    return `instance ${i}: nothing acknowledged while the old leader was frozen; first ${afterKill[i] === null ? 'never' : `${afterKill[i]! - t.killedFrozenAt} ms after it was SIGKILLed`}`;
  });
  return `frozen leader SIGKILLed ${t.killedFrozenAt - t.promotedAt} ms after the promotion; ${parts.join('; ')}`;
}

/** An attempt that is not a ticket, SOLD_OUT/ALL_HELD, or UNAVAILABLE (HTTP 503 with Retry-After). */
function isOtherError(o: Outcome): boolean {
  if (o.kind === 'ok') return false;
  if (o.kind === 'refused') return o.code !== 'SOLD_OUT' && o.code !== 'ALL_HELD';
  return !(o.reason === 'http 503' && o.retryAfter);
}

function otherErrorReasons(history: History): string {
  const counts = new Map<string, number>();
  for (const inv of history.invocations) {
    for (const a of inv.attempts) {
      if (!isOtherError(a.outcome)) continue;
      const reason = a.outcome.kind === 'refused' ? a.outcome.code : a.outcome.kind === 'unknown' ? a.outcome.reason : 'ok';
      counts.set(reason, (counts.get(reason) ?? 0) + 1);
    }
  }
  return [...counts].map(([reason, n]) => `${n} × ${reason}`).join(', ') || 'none';
}

/** The checker's findings a lost acknowledged claim explains (history.ts words them). */
function followsFromLoss(violation: string): boolean {
  return /acknowledged allocation .* is not stored|answered .*, stored|stored \d+ allocations; first pass had|after retries \d+ keys hold a ticket|allocated went back/.test(violation);
}

function withDatabase(url: string, database: string): string {
  return url.replace(/\/postgres(\?|$)/, `/${database}$1`);
}

interface DriveOptions {
  server: ServerProcess;
  fixture: Fixture;
  history: History;
  label: string;
  claims: number;
  concurrency: number;
  perSecond?: number;
  onSent: (sent: number) => void;
}

/**
 * The storm (harness.ts) or, with `perSecond`, the same clients at a steady rate: claim i is not sent
 * before i / perSecond s from the start (after an outage the clients catch up). Each client retries
 * an unknown outcome with its key, backing off, as storm()'s do.
 */
async function drive(o: DriveOptions): Promise<void> {
  if (!o.perSecond) return storm(o);
  const perSecond = o.perSecond;
  const begin = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < o.claims) {
      const i = next++;
      const wait = begin + (i * 1000) / perSecond - Date.now();
      if (wait > 0) await sleep(wait);
      const request: ClaimRequest = {
        campaignId: o.fixture.campaignId,
        holder: `${o.label}-holder-${i}`,
        metadata: { scenario: o.label, i },
        idempotencyKey: `${o.label}-${i}-${randomBytes(4).toString('hex')}`,
      };
      const partnerKey = o.fixture.partnerKeys[i % o.fixture.partnerKeys.length]!;
      const invocation = o.history.add(request, partnerKey);
      o.onSent(i + 1);
      for (let attempt = 0; attempt < 40; attempt += 1) {
        const startedAt = Date.now();
        const outcome = await sendClaim(o.server.url, partnerKey, request, { timeoutMs: 15_000 });
        invocation.attempts.push({ startedAt, endedAt: Date.now(), outcome, retry: attempt > 0 });
        if (outcome.kind !== 'unknown') break;
        await sleep(Math.min(1000, 50 * 2 ** Math.min(attempt, 4)) + Math.random() * 50);
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
}

async function measure(spec: Spec, history: History, sql: Pool, campaignId: string, t: Timeline, cluster: PatroniCluster): Promise<FailoverFigures> {
  const { rows } = await sql.query<{ key: string; id: string; code: string; live: boolean }>(
    `SELECT a.idempotency_key AS key, a.id, t.code, a.status IN ('ACTIVE', 'HELD') AS live
       FROM allocations a JOIN tickets t ON t.campaign_id = a.campaign_id AND t.id = a.ticket_id
      WHERE a.campaign_id = $1`,
    [campaignId],
  );
  const stored = new Map(rows.map((r) => [r.key, r]));
  type Ok = Extract<Outcome, { kind: 'ok' }>;
  const oks = (inv: Invocation) => inv.attempts.map((a) => a.outcome).filter((o): o is Ok => o.kind === 'ok');
  const acknowledged = history.invocations.filter((inv) => oks(inv).length > 0);
  const lost = acknowledged.filter((inv) => oks(inv).some((o) => stored.get(inv.request.idempotencyKey)?.id !== o.allocationId)).length;
  // A ticket acknowledged to two claims (a lost allocation's ticket handed out again), or live twice.
  const keysByCode = new Map<string, Set<string>>();
  for (const inv of acknowledged) for (const o of oks(inv)) keysByCode.set(o.ticketCode, (keysByCode.get(o.ticketCode) ?? new Set()).add(inv.request.idempotencyKey));
  const liveByCode = new Map<string, number>();
  for (const r of rows) if (r.live) liveByCode.set(r.code, (liveByCode.get(r.code) ?? 0) + 1);
  const duplicated = new Set([...[...keysByCode].filter(([, keys]) => keys.size > 1).map(([code]) => code), ...[...liveByCode].filter(([, n]) => n > 1).map(([code]) => code)]).size;
  const withUnknown = history.invocations.filter((inv) => inv.attempts.some((a) => a.outcome.kind === 'unknown'));
  const resolved = withUnknown.filter((inv) => History.last(inv)?.kind !== 'unknown').length;
  const otherErrors = history.invocations.reduce((n, inv) => n + inv.attempts.filter((a) => isOtherError(a.outcome)).length, 0);
  // Recovery: on each instance, the first claim acknowledged after the promotion (the old leader
  // is dead, frozen or shut down by then: that answer came from the new one), and the gap before it.
  const firsts = recoveries(history, spec.id, t.promotedAt);
  const recovered = firsts.includes(null) ? null : Math.max(...(firsts as number[]));
  const pauses = ['0', '1'].map((i, n) => {
    const before = history.invocations
      .filter((inv) => inv.request.holder.startsWith(`${spec.id}${i}-`))
      .flatMap((inv) => inv.attempts.filter((a) => a.outcome.kind === 'ok' && a.endedAt < t.promotedAt).map((a) => a.endedAt));
    return firsts[n]! - (before.length > 0 ? Math.max(...before) : t.faultAt);
  });
  const server = await sql.query<{ server_version: string }>('SHOW server_version');
  return {
    fault: spec.fault,
    replication: spec.synchronous ? 'synchronous' : 'asynchronous',
    claims: history.invocations.length,
    acknowledged: acknowledged.length,
    lost,
    duplicated,
    unknown: withUnknown.length,
    unknownResolved: resolved,
    otherErrors,
    promoteMs: t.promotedAt - t.faultAt,
    recoverMs: recovered === null ? null : recovered - t.faultAt,
    afterPromotionMs: recovered === null ? null : recovered - t.promotedAt,
    pauseMs: recovered === null ? null : Math.max(...pauses),
    setup:
      `${cluster.versions.patroni}, ${cluster.versions.etcd}, PostgreSQL ${server.rows[0]?.server_version.split(' ')[0]}; ` +
      `ttl ${PATRONI_DCS.ttl}, loop_wait ${PATRONI_DCS.loop_wait}, retry_timeout ${PATRONI_DCS.retry_timeout}; link ${LINK_DELAY_MS} ms each way`,
  };
}

