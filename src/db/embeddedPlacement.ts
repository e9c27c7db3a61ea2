// Where the embedded PostgreSQL's binaries and data directory live, and as whom it runs.
//
// PostgreSQL refuses to run as root, so as root it runs as the OS user `postgres` (created when
// missing), which must be able to enter every folder above the binaries and the data directory. A
// project in root's home or in a `mktemp -d` folder is closed to it: the binaries are then copied
// once per version, and the data directory placed, under RELOCATED_ROOT — a place that user can
// reach, kept across restarts.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Why the embedded PostgreSQL could not start, as advice: main.ts prints the message alone. */
export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';
  constructor(
    message: string,
    /** What PostgreSQL printed (the end of its log): shown with LOG_LEVEL=debug. */
    readonly details = '',
  ) {
    super(message);
  }
}

export const OS_USER = 'postgres';
/** Where root keeps what the `postgres` OS user must reach when the project's folder is closed to it. */
export const RELOCATED_ROOT = '/var/lib/tessera/embedded-postgres';

export interface OsUser {
  readonly uid: number;
  readonly gid: number;
}

export interface Placement {
  /** The folder holding bin/, lib/ and share/. */
  readonly binaries: string;
  /** The data directory in use. */
  readonly dir: string;
  /** As root: the OS user PostgreSQL runs as; otherwise undefined (it runs as this process's user). */
  readonly user: OsUser | undefined;
}

/** Where to run the PostgreSQL of data directory `asked`, and as whom. */
export function placement(asked: string): Placement {
  const user = serverUser();
  return { user, binaries: binariesFor(user, packagedBinaries()), dir: dataDirFor(user, asked) };
}

interface Binaries {
  readonly dir: string;
  readonly version: string;
}

/** The PostgreSQL binaries of this platform's package, found without loading it (it is ESM-only). */
function packagedBinaries(): Binaries {
  const platform = os.platform() === 'win32' ? 'windows' : os.platform();
  const name = `@embedded-postgres/${platform}-${os.arch()}`;
  let entry: string;
  try {
    entry = require.resolve(name);
  } catch {
    throw new EmbeddedPostgresError(
      `No embedded PostgreSQL for this platform (${name} is not installed). Set DATABASE_URL to a PostgreSQL 14 or newer server.`,
    );
  }
  const root = path.resolve(path.dirname(entry), '..');
  const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  return { dir: path.join(root, 'native'), version };
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

function idOf(flag: '-u' | '-g'): number | undefined {
  const result = spawnSync('id', [flag, OS_USER], { encoding: 'utf8' });
  return result.status === 0 ? Number(result.stdout.trim()) : undefined;
}

/** As root, the `postgres` OS user (created when missing); otherwise undefined: run as ourselves. */
function serverUser(): OsUser | undefined {
  if (!isRoot()) return undefined;
  if (idOf('-u') === undefined) {
    const created = spawnSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', OS_USER], { encoding: 'utf8' });
    if (created.status !== 0 && idOf('-u') === undefined) {
      throw new EmbeddedPostgresError(
        `PostgreSQL refuses to run as root, and the OS user "${OS_USER}" to run it as could not be created (useradd: ${(created.stderr || String(created.error)).trim()}). Create that user, run Tessera as another user, or set DATABASE_URL.`,
      );
    }
  }
  return { uid: idOf('-u')!, gid: idOf('-g')! };
}

/** Whether `user` can enter (search) `dir` and every folder above it. */
function reachable(user: OsUser, dir: string): boolean {
  return spawnSync('/bin/sh', ['-c', 'test -x "$1"', 'sh', dir], { cwd: '/', uid: user.uid, gid: user.gid }).status === 0;
}

/** The binaries where `user` can run them: a copy per version under RELOCATED_ROOT when needed. */
function binariesFor(user: OsUser | undefined, packaged: Binaries): string {
  if (!user || reachable(user, path.join(packaged.dir, 'bin'))) return packaged.dir;
  const target = path.join(RELOCATED_ROOT, packaged.version);
  if (!existsSync(path.join(target, '.complete'))) {
    // Copied whole under another name, then renamed into place: a copy cut short is never used.
    const partial = `${target}.partial-${process.pid}`;
    rmSync(partial, { recursive: true, force: true });
    cpSync(packaged.dir, partial, { recursive: true, verbatimSymlinks: true });
    writeFileSync(path.join(partial, '.complete'), `${packaged.version}\n`);
    try {
      renameSync(partial, target);
    } catch {
      rmSync(partial, { recursive: true, force: true }); // another process put its copy there first
    }
  }
  openUpTo(target);
  return target;
}

/** Makes every folder from RELOCATED_ROOT's parent down to `dir` enterable by everyone (0755). */
function openUpTo(dir: string): void {
  for (let current = dir; current !== path.dirname(current); current = path.dirname(current)) {
    chmodSync(current, 0o755);
    if (current === path.dirname(RELOCATED_ROOT)) break;
  }
}

/** The data directory `user` can use: `asked`, or a place of its own under RELOCATED_ROOT. */
function dataDirFor(user: OsUser | undefined, asked: string): string {
  mkdirSync(path.dirname(asked), { recursive: true });
  if (!user || reachable(user, path.dirname(asked))) return asked;
  const dir = relocatedDir(asked);
  mkdirSync(path.dirname(dir), { recursive: true });
  openUpTo(path.dirname(dir));
  // The folder it stands for, beside it (initdb wants the data directory empty): what messages name.
  writeFileSync(askedFile(dir), asked);
  return dir;
}

/**
 * Where root places the data directory `asked` when the `postgres` OS user cannot reach it, there or
 * not yet: named after the project's folder and the data directory's name, with a hash of the whole
 * path, so every process asking for `asked` finds the same place and two projects never share one.
 */
export function relocatedDir(asked: string): string {
  const key = createHash('sha256').update(asked).digest('hex').slice(0, 12);
  return path.join(RELOCATED_ROOT, 'data', `${path.basename(path.dirname(path.dirname(asked)))}-${path.basename(asked)}-${key}`);
}

const askedFile = (dir: string) => `${dir}.asked`;

/**
 * A data directory as a message names it: the folder it stands for, and where its data really is
 * when root placed it under RELOCATED_ROOT — `/root/app/.tessera/pgdata (its data in
 * /var/lib/tessera/embedded-postgres/data/app-pgdata-…)`.
 */
export function describedDir(dataDir: string): string {
  const asked = shownAs(dataDir);
  return asked === dataDir ? dataDir : `${asked} (its data in ${dataDir})`;
}

/**
 * Deletes data directory `dir` and what lies beside it (`.asked`, `.log`, `.users`) when it is one
 * root placed under RELOCATED_ROOT and its server is not running (no postmaster.pid): a folder
 * inside a project goes with the project, one out here would outlive it. True when it deleted it.
 */
export function removeRelocated(dir: string): boolean {
  if (path.dirname(dir) !== path.join(RELOCATED_ROOT, 'data') || existsSync(path.join(dir, 'postmaster.pid'))) return false;
  for (const item of [dir, askedFile(dir), `${dir}.log`, `${dir}.users`]) rmSync(item, { recursive: true, force: true });
  return true;
}

/**
 * The folder a data directory stands for, as its user named it: EMBEDDED_PG_DIR (or npm test's),
 * also when root placed the data directory under RELOCATED_ROOT — what a message should say.
 */
function shownAs(dataDir: string): string {
  try {
    return readFileSync(askedFile(dataDir), 'utf8') || dataDir;
  } catch {
    return dataDir;
  }
}
