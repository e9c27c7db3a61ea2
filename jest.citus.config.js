/**
 * Tessera on a real Citus cluster (npm run test:citus): the coordinator at CITUS_URL and its two
 * workers (.ci/run starts them). Every test file gets a database of its own on every node, cloned
 * from a migrated, distributed template (test/helpers/globalSetupCitus.ts); the servers under test
 * talk to the coordinator. One file at a time.
 *
 * Without CITUS_URL (or with no cluster answering there) only test/citus/cluster.citus.ts runs, and
 * reports every suite skipped.
 */
const base = require('./jest.config');

/**
 * Suites of `npm test` that run unchanged on Citus, then the Citus-only ones in test/citus/. Not yet
 * listed: those that need claims at one server's speed (idempotency's bursts pass on an idle machine
 * and answer UNAVAILABLE on a busy one; storms, chaos, holds at scale) — docs/SCALING.md, "Citus".
 */
const SUITES = ['ballotClaims.test.ts', 'webhooksApi.test.ts', 'webhookDelivery.test.ts', 'operatorReads.test.ts', 'observability.test.ts'];

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/citus/*.citus.ts', ...(process.env.CITUS_URL ? SUITES.map((file) => `<rootDir>/test/${file}`) : [])],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: '<rootDir>/test/helpers/globalSetupCitus.ts',
  globalTeardown: '<rootDir>/test/helpers/globalTeardownCitus.ts',
  maxWorkers: 1,
};
