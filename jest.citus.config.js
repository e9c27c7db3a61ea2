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
 * Suites of `npm test` that run unchanged on Citus: those tagged `// @dialects … citus` in their
 * first line (jest.dialects.js) — the dialects' conformance suite, the concurrency suites (the
 * exactly-once race and storm, the mixed stress, the chaos scenarios), the core flows and every
 * feature's happy path through the GraphQL API — then the Citus-only ones in test/citus/. Suites
 * about the process or the transports, which do not change with the database, are not tagged.
 */
const { suitesFor } = require('./jest.dialects');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/citus/*.citus.ts', ...(process.env.CITUS_URL ? suitesFor('citus') : [])],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: '<rootDir>/test/helpers/globalSetupCitus.ts',
  globalTeardown: '<rootDir>/test/helpers/globalTeardownCitus.ts',
  maxWorkers: 1,
};
