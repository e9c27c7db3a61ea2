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
  // What a test file started and Node keeps for the process (a PerformanceObserver) is ended with the file.
  setupFilesAfterEnv: ['<rootDir>/test/helpers/releaseObservers.ts'],
  // Every test file gets its own database cloned from a migrated template; two workers match the
  // two cores here and keep concurrency tests from starving each other.
  maxWorkers: 2,
  // A worker's heap still grows with every file it runs (each file loads its own copy of src/,
  // Prisma's client among them, and not all of it is collected): a worker past this after a file
  // is replaced by a fresh one. heapUsed is measured, not RSS; RSS ran about twice the heap.
  workerIdleMemoryLimit: '384MB',
  testTimeout: 60_000,
};
