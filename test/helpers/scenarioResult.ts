// What every chaos scenario run by npm test must show (test/chaos.test.ts, test/failover.test.ts): it
// ran, it claimed, and its checker found no violation (the verdict line says what, when one did).
import { verdictLine, type ScenarioResult } from '../chaos/scenarios';

export function expectInvariantsKept(result: ScenarioResult): void {
  expect(result.skipped).toBeUndefined();
  expect(result.claims).toBeGreaterThan(0);
  if (result.violations.length > 0) throw new Error(verdictLine(result));
  expect(result.violations).toEqual([]);
  expect(result.stored).toBeGreaterThan(0);
}
