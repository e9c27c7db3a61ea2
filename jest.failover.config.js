/**
 * The failover drill on a real Patroni cluster (npm run test:failover): PostgreSQL servers of its
 * own under Patroni and etcd from Debian, the leader killed, switched over and frozen under claims
 * (test/failover.test.ts; skipped with a message where Patroni or etcd is missing). Apart from
 * `npm test`, as the cluster, PgBouncer and Citus suites are: it needs software beside Node and takes
 * a minute and a half here.
 */
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/failover.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  maxWorkers: 1,
};
