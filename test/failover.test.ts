// The failover drill of `npm run chaos` (scenarios j, k, …: SCENARIO_GROUPS.failover) at its quick
// size: a Patroni cluster of this machine's PostgreSQL, the primary killed under claims, every
// acknowledged claim checked on the promoted standby (docs/RELIABILITY.md, "Failover"). It starts
// PostgreSQL servers of its own, so DATABASE_URL does not change what it tests; beside
// test/chaos.test.ts (the other scenarios) so that Jest's two workers run the two side by side.
// Not run through PgBouncer (npm run test:pgbouncer lists chaos.test.ts only).
import { SCENARIO_GROUPS, SCENARIOS, type ScenarioEnv } from './chaos/scenarios';
import { SERVER_ENV } from './helpers/env';
import { expectInvariantsKept } from './helpers/scenarioResult';
import { FIXED_WORK_TIMEOUT_MS } from './helpers/time';

const FAILOVER = SCENARIO_GROUPS.failover ?? [];
const cases = SCENARIOS.map((scenario, i) => [String.fromCharCode(97 + i), scenario] as const).filter(([id]) => FAILOVER.includes(id));

test('the failover drill has its scenarios', () => expect(cases.length).toBe(FAILOVER.length));

test.each(cases)(
  'chaos scenario %s (the failover drill) keeps every invariant',
  async (_id, scenario) => {
    const env: ScenarioEnv = { pgUrl: process.env[SERVER_ENV]!, size: 'quick' };
    const result = await scenario(env);
    // The drill needs the machine's PostgreSQL binaries, Patroni and etcd: a machine without them (a
    // user's clone with only Node.js) skips it and says so.
    if (result.skipped?.startsWith('no PostgreSQL binaries')) return console.warn(`skipped ${result.id}: ${result.skipped}`);
    expectInvariantsKept(result);
  },
  FIXED_WORK_TIMEOUT_MS,
);
