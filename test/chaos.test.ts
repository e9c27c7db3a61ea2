// The bounded subset of `npm run chaos` that runs in npm test: every fault scenario at its quick
// size, against real Tessera processes, each checked for zero invariant violations.
import path from 'node:path';
import { spawnEmbeddedHost } from './chaos/harness';
import { SCENARIOS, verdictLine, type ScenarioEnv } from './chaos/scenarios';
import { SERVER_ENV } from './helpers/env';
import { FIXED_WORK_TIMEOUT_MS } from './helpers/time';

let env: ScenarioEnv;
let host: Awaited<ReturnType<typeof spawnEmbeddedHost>> & { [Symbol.asyncDispose]?: () => Promise<void> };

beforeAll(async () => {
  // Scenario c restarts PostgreSQL: it gets a cluster of its own, never the one other tests use.
  host = await spawnEmbeddedHost(
    path.resolve(__dirname, '../.tessera/chaos-test-pgdata'),
    Number(process.env.TESSERA_CHAOS_TEST_EMBEDDED_PORT ?? 54359),
  );
  env = { pgUrl: process.env[SERVER_ENV]!, restartable: host, size: 'quick' };
}, FIXED_WORK_TIMEOUT_MS);
afterAll(async () => {
  await host?.[Symbol.asyncDispose]?.();
});

test.each(SCENARIOS.map((scenario, i) => [String.fromCharCode(97 + i), scenario] as const))(
  'chaos scenario %s keeps every invariant',
  async (_id, scenario) => {
    const result = await scenario(env);
    // The failover drill (j, k) needs the machine's initdb and pg_basebackup: a machine with only
    // Node.js (the embedded PostgreSQL has no pg_basebackup) skips it and says so.
    if (result.skipped?.startsWith('no PostgreSQL binaries')) return console.warn(`skipped ${result.id}: ${result.skipped}`);
    expect(result.skipped).toBeUndefined();
    expect(result.claims).toBeGreaterThan(0);
    if (result.violations.length > 0) throw new Error(verdictLine(result));
    expect(result.violations).toEqual([]);
    expect(result.stored).toBeGreaterThan(0);
  },
  FIXED_WORK_TIMEOUT_MS,
);
