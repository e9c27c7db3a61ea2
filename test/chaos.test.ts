// @dialects postgresql pgbouncer citus
// The bounded subset of `npm run chaos` that runs in npm test: every fault scenario but the failover
// drill (test/failover.test.ts runs that) at its quick size, against real Tessera processes, each
// checked for zero invariant violations (the failover drill is a file of its own, so that Jest's two
// workers run them side by side). Through PgBouncer and on Citus a subset: ONLY, below.
//
// Under npm run test:pgbouncer (TESSERA_TEST_POOLER_URL set) the Tessera processes reach PostgreSQL
// through PgBouncer in transaction mode — the test server's (globalSetupPgbouncer.ts) and one of
// this file's own in front of scenario c's restartable PostgreSQL — while the faults (terminated
// backends, restarts) and the checks still go to PostgreSQL itself.
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import { connectDirectly, connectThroughPooler, spawnEmbeddedHost } from './chaos/harness';
import { SCENARIO_GROUPS, SCENARIOS, verdictLine, type ScenarioEnv } from './chaos/scenarios';
import { citusNodes } from './helpers/citus';
import { SERVER_ENV } from './helpers/env';
import { POOLER_ENV, startPgBouncerFor, type PgBouncer } from './helpers/pgbouncer';
import { expectInvariantsKept } from './helpers/scenarioResult';
import { FIXED_WORK_TIMEOUT_MS } from './helpers/time';

const poolerUrl = process.env[POOLER_ENV];
/** In test/failover.test.ts: the failover drill (j, k, …), which starts PostgreSQL servers of its own. */
const FAILOVER = SCENARIO_GROUPS.failover ?? [];

let env: ScenarioEnv;
let host: Awaited<ReturnType<typeof spawnEmbeddedHost>> & { [Symbol.asyncDispose]?: () => Promise<void> };
let hostPooler: PgBouncer | undefined;

beforeAll(async () => {
  // Scenario c restarts PostgreSQL: it gets a cluster of its own, never the one other tests use.
  host = await spawnEmbeddedHost(
    path.resolve(__dirname, '../.tessera/chaos-test-pgdata'),
    Number(process.env.TESSERA_CHAOS_TEST_EMBEDDED_PORT ?? 54359),
  );
  env = { pgUrl: process.env[SERVER_ENV]!, restartable: host, size: 'quick' };
  if (poolerUrl) {
    hostPooler = await startPgBouncerFor(host.url);
    connectThroughPooler(process.env[SERVER_ENV]!, poolerUrl);
    connectThroughPooler(host.url, hostPooler.url('postgres'));
    console.warn(`through PgBouncer: ${poolerUrl} (test server), ${hostPooler.url('postgres')} (scenario c's PostgreSQL)`);
  }
}, FIXED_WORK_TIMEOUT_MS);
afterAll(async () => {
  connectDirectly();
  if (hostPooler) {
    try {
      copyFileSync(hostPooler.logfile, path.resolve(__dirname, '../test-results/pgbouncer-restartable.log'));
    } catch {
      // no log written
    }
    await hostPooler.stop();
  }
  await host?.[Symbol.asyncDispose]?.();
});

/**
 * The scenarios this run's database needs, beyond npm test's (every one but the failover drill, on
 * one PostgreSQL). Through PgBouncer (npm run test:pgbouncer): the faults of connections — crashes,
 * terminated backends, a restart, an exhausted pool, a transaction held open, clients leaving (a–f);
 * the features' own faults (webhooks, allotments, waitlists: g–i) ask nothing more of a pooler. On
 * Citus (npm run test:citus): the crash, backends terminated on the coordinator and the workers, and
 * clients leaving and replaying their keys (a, b, f) — c restarts a plain PostgreSQL of its own, d and
 * e are the process's pool, and g–i's features run on Citus in their own suites (webhookDelivery,
 * allotments, waitlist); all of them ran there until 2026-12-07, when CI outgrew its 25 minutes.
 */
const ONLY = citusNodes() !== null ? ['a', 'b', 'f'] : poolerUrl ? ['a', 'b', 'c', 'd', 'e', 'f'] : null;

const cases = SCENARIOS.map((scenario, i) => [String.fromCharCode(97 + i), scenario] as const).filter(
  ([id]) => !FAILOVER.includes(id) && (ONLY === null || ONLY.includes(id)),
);

test.each(cases)(
  'chaos scenario %s keeps every invariant',
  async (_id, scenario) => {
    const result = await scenario(env);
    if (poolerUrl) console.log(verdictLine(result)); // the scenario's figures through PgBouncer, for the run's log
    expectInvariantsKept(result);
  },
  FIXED_WORK_TIMEOUT_MS,
);
