/** Browser tests (npm run test:e2e): Playwright driving the system's Chromium. */
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: ['**/e2e/**/*.e2e.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  maxWorkers: 1,
  testTimeout: 120_000,
};
