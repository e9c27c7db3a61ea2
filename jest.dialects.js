/**
 * Which test files run on which database (src/db/dialect.ts): a file says so in its first line,
 * `// @dialects postgresql pgbouncer citus` (any of the three). Every file runs on one PostgreSQL in
 * `npm test`; jest.pgbouncer.config.js and jest.citus.config.js run the files that name theirs.
 */
const { readdirSync, readFileSync } = require('node:fs');
const path = require('node:path');

const TEST_DIR = path.join(__dirname, 'test');
const TAG = /^\/\/ @dialects ((?:\w+ ?)+)$/;

/** The test files (test/*.test.ts, as `<rootDir>/test/…` patterns) whose tag names `dialect`. */
function suitesFor(dialect) {
  return readdirSync(TEST_DIR)
    .filter((file) => file.endsWith('.test.ts'))
    .filter((file) => {
      const first = readFileSync(path.join(TEST_DIR, file), 'utf8').split('\n', 1)[0];
      const tag = TAG.exec(first);
      return tag !== null && tag[1].trim().split(' ').includes(dialect);
    })
    .sort()
    .map((file) => `<rootDir>/test/${file}`);
}

module.exports = { suitesFor };
