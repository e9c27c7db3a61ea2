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
 * Suites of `npm test` that run unchanged on Citus, then the Citus-only ones in test/citus/: the
 * concurrency suites (the exactly-once race and storm, the mixed stress at 64 clients, the chaos scenarios with
 * servers SIGKILLed and backends terminated), the core flows and every feature's happy path through
 * the GraphQL API, group claims (of one campaign each on Citus), verify/repair, and the loads (COPY
 * into the distributed table) with the tickets-campaigns rule kept on the shards, and test mode (its
 * wall between modes, its clock and its purge, all of whose statements Citus must accept). Not listed: the failover drill (a Patroni cluster of plain
 * PostgreSQL), suites about the process or the transports, which do not change with the database,
 * and the CLI's (it speaks only the GraphQL API, whose operations the suites above run; it passes
 * here too, in 32 s that CI's budget needs), and the ballot's 200-draw fairness check (the draw's
 * arithmetic, the same SQL on any database: ballot.test.ts skips it here). The chaos scenarios of the cluster (a, b — at half its quick size —, f: test/chaos.test.ts
 * says why) run on databases of the cluster (test/chaos/harness.ts), b terminating backends on the
 * workers too.
 */
const SUITES = [
  'claim.race.test.ts',
  'groupClaims.test.ts',
  'storm.test.ts',
  'mixed.test.ts',
  'chaos.test.ts',
  'idempotency.test.ts',
  'holds.test.ts',
  'holdExtension.test.ts',
  'holderLimit.test.ts',
  'claimTickets.test.ts',
  'quotas.test.ts',
  'allotments.test.ts',
  'releasePolicy.test.ts',
  'soldOut.test.ts',
  'close.test.ts',
  'waitlist.test.ts',
  'ballot.test.ts',
  'ballotClaims.test.ts',
  'reports.test.ts',
  'verify.test.ts',
  'webhooksApi.test.ts',
  'webhookDelivery.test.ts',
  'operatorReads.test.ts',
  'observability.test.ts',
  'ticketLoads.test.ts',
  'testMode.test.ts',
  'testModeRehearsal.test.ts',
  'ticketCampaignKey.test.ts',
];

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/citus/*.citus.ts', ...(process.env.CITUS_URL ? SUITES.map((file) => `<rootDir>/test/${file}`) : [])],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: '<rootDir>/test/helpers/globalSetupCitus.ts',
  globalTeardown: '<rootDir>/test/helpers/globalTeardownCitus.ts',
  maxWorkers: 1,
};
