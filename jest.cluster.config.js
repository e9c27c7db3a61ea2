/**
 * Several instances on one database (npm run test:cluster): three Tessera processes, requests sent
 * round-robin across them. One file at a time: the instances already use both cores.
 */
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: ['**/cluster/**/*.cluster.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  maxWorkers: 1,
  testTimeout: 120_000,
};
