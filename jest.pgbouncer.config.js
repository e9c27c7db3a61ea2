/**
 * The concurrency and fault suites through a real PgBouncer (npm run test:pgbouncer): PgBouncer 1.18
 * in transaction mode between every server under test and PostgreSQL (test/helpers/pgbouncer.ts),
 * while the tests' own assertions and faults (pg_terminate_backend, restarts) go to PostgreSQL
 * directly. The suites tagged `// @dialects … pgbouncer` (jest.dialects.js): the dialects'
 * conformance suite, the exactly-once race, the storm, the mixed stress and the chaos scenarios of
 * connections. One file at a time.
 *
 * Without pgbouncer only test/pooler/pgbouncer.pooler.ts runs, and reports every suite skipped.
 */
const { accessSync, constants, statSync } = require('node:fs');
const path = require('node:path');
const base = require('./jest.config');

// pgbouncerPath() of test/helpers/pgbouncer.ts, again: this file is read before any TypeScript is compiled.
const installed = ['/usr/sbin/pgbouncer', ...(process.env.PATH || '').split(path.delimiter).filter(Boolean).map((dir) => path.join(dir, 'pgbouncer'))].some(
  (candidate) => {
    try {
      accessSync(candidate, constants.X_OK);
      return statSync(candidate).isFile();
    } catch {
      return false;
    }
  },
);

const { suitesFor } = require('./jest.dialects');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/pooler/pgbouncer.pooler.ts', ...(installed ? suitesFor('pgbouncer') : [])],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: '<rootDir>/test/helpers/globalSetupPgbouncer.ts',
  globalTeardown: '<rootDir>/test/helpers/globalTeardownPgbouncer.ts',
  maxWorkers: 1,
};
