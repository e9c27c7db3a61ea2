/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // The failover drill runs apart (npm run test:failover, jest.failover.config.js).
  testPathIgnorePatterns: ['/node_modules/', '/e2e/', '/test/failover\\.test\\.ts$'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/test/tsconfig.json' }],
  },
  globalSetup: '<rootDir>/test/helpers/globalSetup.ts',
  globalTeardown: '<rootDir>/test/helpers/globalTeardown.ts',
  // Every test file gets its own database cloned from a migrated template; two workers match the
  // two cores here and keep concurrency tests from starving each other.
  maxWorkers: 2,
  testTimeout: 60_000,
};
