// j, k. The failover drill (issue 19), the test Jepsen, Stolon and Patroni run on PostgreSQL: a
// primary and a streaming standby of our own (test/helpers/replica.ts), a claim storm through two
// Tessera instances whose DATABASE_URL lists both servers (target_session_attrs=read-write, see
// src/db/hosts.ts), then the primary SIGKILLed mid-storm — the postmaster and every backend, nothing
// flushed — and the standby promoted (`pg_ctl promote`, what a failover manager does). Nobody
// restarts or reconfigures Tessera. The clients retry their unknown outcomes with their keys, and the
// history is checked on the promoted server.
//
// j replicates synchronously (synchronous_standby_names = '*': a commit returns once the standby has
// flushed it): every acknowledged claim must survive — 0 lost, 0 duplicated, every unknown
// resolved, and every other invariant of the history checker. k replicates asynchronously, and the
// drill reports what that loses: claims acknowledged by the primary whose WAL had not reached the
// standby when it died. Those losses (and their consequences: a lost ticket handed out again, the
// figures going back) are expected there and counted in the table, not as violations; every other
// invariant must still hold.
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import { migrate } from '../../src/db/migrate';
import { startReplicaPair, type ReplicaPair } from '../helpers/replica';
import { sleep } from '../helpers/time';
import { checkHistory, History, type Invocation } from './history';
import type { Outcome } from './client';
import { freePort, retryUnknowns, scenarioResult, ServerProcess, setUpCampaign, statsReader, storm } from './harness';
import type { ScenarioEnv, ScenarioResult } from './scenarios';

export interface FailoverFigures {
  replication: 'synchronous' | 'asynchronous';
  claims: number;
  /** Claims answered with an allocation (at any attempt). */
  acknowledged: number;
  /** Acknowledged allocations the promoted server does not have. */
  lost: number;
  /** Tickets acknowledged to more than one claim, or with two live allocations. */
  duplicated: number;
  /** Claims that met an unknown outcome (timeout, reset, 503) and how many of them ended answered. */
  unknown: number;
  unknownResolved: number;
  /** SIGKILL of the primary to the promoted standby accepting writes. */
  promoteMs: number;
  /** SIGKILL of the primary to the first claim acknowledged after it, on each instance (the slower). */
  recoverMs: number;
}

/** The replication link's one-way delay: about what separates two zones of a region, or nearby regions. */
export const LINK_DELAY_MS = 5;

/**
 * The primary is dead this long before the standby is promoted, as a failover manager takes time to
 * decide (Patroni's defaults: up to 30 s). Longer than the server's own retries of a claim whose
 * connection failed (about 1.2 s at most): clients see unknown outcomes and retry them by key.
 */
const DETECTION_MS = 2000;

const SKIPPED = 'no PostgreSQL binaries with pg_basebackup on this machine (set PG_BIN)';

export const failoverSync = (env: ScenarioEnv) => drill('j', 'synchronous', env);
export const failoverAsync = (env: ScenarioEnv) => drill('k', 'asynchronous', env);

async function drill(id: string, replication: FailoverFigures['replication'], env: ScenarioEnv): Promise<ScenarioResult> {
  const name = `failover: primary SIGKILLed mid-storm, ${replication} standby promoted, two instances`;
  // npm test's size is small: two PostgreSQL servers and two Tessera processes already load the
  // machine that runs the other test files beside this one.
  const p = env.size === 'full' ? { tickets: 1500, claims: 1800, concurrency: 48 } : { tickets: 150, claims: 200, concurrency: 16 };
  const started = Date.now();
  const pair = await startReplicaPair({ linkDelayMs: LINK_DELAY_MS });
  if (!pair) return { id, name, skipped: SKIPPED, claims: 0, ok: 0, refused: 0, unknown: 0, retries: 0, stored: 0, total: 0, available: 0, violations: [], notes: [], seconds: 0 };
  const servers: ServerProcess[] = [];
  const notes: string[] = [];
  let sql: Pool | null = null;
  try {
    await pair.setSynchronous(replication === 'synchronous');
    const database = `tessera_chaos_${id}_${randomBytes(3).toString('hex')}`;
    await createDatabase(pair, database);
    const both = withDatabase(pair.bothUrl, database);
    await migrate(withDatabase(pair.primaryUrl, database));
    for (let i = 0; i < 2; i += 1) {
      servers.push(new ServerProcess(await freePort(), { DATABASE_URL: both, DATABASE_POOL_SIZE: '10' }));
      await servers[i]!.start();
    }
    const fixture = await setUpCampaign(servers[0]!, p.tickets);
    const history = new History();
    const reader = statsReader(servers[1]!, fixture.campaignId, history);
    let killedAt = 0;
    let promoteMs = 0;
    let fault: Promise<void> | null = null;
    const half = Math.floor(p.claims / 2);
    try {
      await Promise.all(
        servers.map((server, i) =>
          storm({
            server,
            fixture,
            history,
            label: `${id}${i}`,
            claims: i === 0 ? half : p.claims - half,
            concurrency: p.concurrency / 2,
            onSent: (sent) => {
              if (i !== 0 || sent !== Math.floor(half * 0.4)) return;
              fault = (async () => {
                killedAt = Date.now();
                pair.killPrimary();
                notes.push(`primary SIGKILLed after ${sent * 2} claims sent`);
                await sleep(DETECTION_MS); // the failover manager notices; meanwhile both instances find no primary
                await pair.promoteStandby();
                promoteMs = Date.now() - killedAt;
              })();
            },
          }),
        ),
      );
      await fault;
    } finally {
      await reader.stop();
    }
    // The clients retry whatever is still unknown, on either instance.
    await retryUnknowns(servers[0]!, history);
    sql = new Pool({ connectionString: withDatabase(pair.standbyUrl, database), max: 4 });
    sql.on('error', () => undefined);
    const verdict = await checkHistory(history, sql, fixture.campaignId);
    const figures = await measure(id, history, sql, fixture.campaignId, replication, killedAt, promoteMs);
    // Asynchronous replication loses what the standby had not received; that, and what follows from
    // it, is the figure this drill reports. Anything else is a violation in both modes.
    const expected = replication === 'asynchronous' && figures.lost > 0 ? verdict.violations.filter(followsFromLoss) : [];
    const violations = verdict.violations.filter((v) => !expected.includes(v));
    if (replication === 'synchronous' && (figures.lost > 0 || figures.duplicated > 0)) violations.push(`${figures.lost} acknowledged claims lost, ${figures.duplicated} tickets acknowledged twice with synchronous replication`);
    if (figures.unknownResolved !== figures.unknown) violations.push(`${figures.unknown - figures.unknownResolved} unknown outcomes never resolved`);
    notes.push(
      `${figures.acknowledged} acknowledged, ${figures.lost} lost, ${figures.duplicated} duplicated, ${figures.unknownResolved}/${figures.unknown} unknown resolved; ` +
        `standby promoted ${figures.promoteMs} ms after the kill, claims acknowledged again after ${figures.recoverMs} ms`,
    );
    if (expected.length > 0) notes.push(`expected with asynchronous replication: ${expected.length} checker findings that follow from the ${figures.lost} lost claims (first: ${expected[0]})`);
    return { ...scenarioResult({ id, name, history, verdict, violations, notes, started }), failover: figures };
  } catch (error) {
    throw new Error(`${id}: ${(error as Error).message}\n--- server logs ---\n${servers.map((s) => s.log).join('\n---\n')}`, { cause: error });
  } finally {
    for (const server of servers) await server.stop();
    await sql?.end().catch(() => undefined);
    pair.stop();
  }
}

/** The checker's findings a lost acknowledged claim explains (history.ts words them). */
function followsFromLoss(violation: string): boolean {
  return /acknowledged allocation .* is not stored|answered .*, stored|stored \d+ allocations; first pass had|after retries \d+ keys hold a ticket|allocated went back/.test(violation);
}

async function createDatabase(pair: ReplicaPair, name: string): Promise<void> {
  const admin = new Pool({ connectionString: pair.primaryUrl, max: 1 });
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
}

function withDatabase(url: string, database: string): string {
  return url.replace(/\/postgres(\?|$)/, `/${database}$1`);
}

async function measure(id: string, history: History, sql: Pool, campaignId: string, replication: FailoverFigures['replication'], killedAt: number, promoteMs: number): Promise<FailoverFigures> {
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
  // Recovery: on each instance, the first claim acknowledged that was sent after the kill.
  const recoveredAt = ['0', '1'].map((i) =>
    Math.min(
      ...history.invocations
        .filter((inv) => inv.request.holder.startsWith(`${id}${i}-`))
        .flatMap((inv) => inv.attempts.filter((a) => a.startedAt >= killedAt && a.outcome.kind === 'ok').map((a) => a.endedAt)),
    ),
  );
  return {
    replication,
    claims: history.invocations.length,
    acknowledged: acknowledged.length,
    lost,
    duplicated,
    unknown: withUnknown.length,
    unknownResolved: resolved,
    promoteMs,
    recoverMs: Math.max(...recoveredAt) - killedAt,
  };
}
