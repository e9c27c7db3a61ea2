// npm run test:citus: the cluster itself — or, on a machine without one, the one line saying so.
import { CITUS_ENV, citusNodes } from '../helpers/citus';
import { CITUS_SKIP_ENV } from '../helpers/globalSetupCitus';

const skip = process.env[CITUS_SKIP_ENV];
if (skip) {
  test.skip(`Citus: every suite skipped: ${skip}`, () => undefined);
} else {
  test(`the cluster at ${CITUS_ENV} has a coordinator and two workers`, async () => {
    const nodes = citusNodes()!;
    expect(nodes.length).toBe(3);
  });
}
