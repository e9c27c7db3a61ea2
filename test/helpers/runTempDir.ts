// Each `npm test` run has a temporary folder of its own, <tmpdir>/tessera-test-run-<run>: globalSetup
// points TMPDIR at it, so that os.tmpdir() in every test file and in every process they start is
// inside it, and globalTeardown deletes it whole. What a test leaves in it is listed by name first
// (a test removes what it makes: test/helpers/tempDirs.ts); nothing outlives the run either way,
// and the runs of other checkouts on the machine, sharing its temporary folder, are never looked at.
import { chmodSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const RUN_TMPDIR_ENV = 'TESSERA_TEST_RUN_TMPDIR';
/** TMPDIR as it was before the run (empty: unset). */
const OUTER_TMPDIR_ENV = 'TESSERA_TEST_OUTER_TMPDIR';

export function enterRunTempDir(run: string): void {
  const dir = path.join(os.tmpdir(), `tessera-test-run-${run}`);
  mkdirSync(dir);
  // Enterable by all: as root, the embedded PostgreSQL's own OS user reads initdb's password file here.
  chmodSync(dir, 0o755);
  process.env[OUTER_TMPDIR_ENV] = process.env.TMPDIR ?? '';
  process.env[RUN_TMPDIR_ENV] = dir;
  process.env.TMPDIR = dir;
}

/**
 * Deletes the run's temporary folder; the names of what the tests left in it — but tsx's compile
 * cache (tsx-<uid>), which the `node --import tsx` processes tests start keep in os.tmpdir().
 */
export function leaveRunTempDir(): string[] {
  const dir = process.env[RUN_TMPDIR_ENV];
  if (!dir) return [];
  let left: string[] = [];
  try {
    left = readdirSync(dir).filter((name) => !name.startsWith('tsx-'));
  } catch {
    // gone already
  }
  rmSync(dir, { recursive: true, force: true });
  const outer = process.env[OUTER_TMPDIR_ENV];
  if (outer) process.env.TMPDIR = outer;
  else delete process.env.TMPDIR;
  delete process.env[RUN_TMPDIR_ENV];
  return left;
}
