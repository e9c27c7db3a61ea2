// The embedded PostgreSQL serves only the data directory it was given (issue 27): a server of
// another folder already on the port is refused with one line, never used as this folder's; a
// server left running by a killed process is joined only when it proves to be this folder's; and
// of several processes using one, only the last one out stops it (two `npm test` of one checkout).
// Every server here has a folder of its own under .tessera/ and free ports. As root, in a project
// folder PostgreSQL's OS user cannot enter, the data is placed under /var/lib/tessera instead, and
// npm test's own (release({ removeRelocated })) is deleted by the last run out.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { relocatedDir, removeRelocated } from '../src/db/embeddedPlacement';
import { portTaken } from '../src/db/embeddedProcess';
import { ADMIN_KEY, graphqlData } from './helpers/graphql';
import { accepts, freePort, ROOT, runToExit, startProcess, type TesseraProcess } from './helpers/process';

/** As root in a folder PostgreSQL's user cannot enter, a message names where each folder's data really is. */
const PLACED = String.raw`(?: \(its data in [^)]*\))?`;

let parent: string;
const running: TesseraProcess[] = [];

beforeEach(() => {
  // Under the project folder: as root, PostgreSQL runs as its own OS user and must reach it.
  mkdirSync(path.join(ROOT, '.tessera'), { recursive: true });
  parent = mkdtempSync(path.join(ROOT, '.tessera', 'folders-'));
  chmodSync(parent, 0o755);
});

afterEach(async () => {
  for (const p of running.splice(0)) p.child.kill('SIGKILL');
  // A killed process leaves its server running: stop every one this test started.
  for (const dir of ['a', 'b']) stopLeftover(path.join(parent, dir));
  rmSync(parent, { recursive: true, force: true });
  // As root in a closed project folder, the data of a and b was placed under /var/lib/tessera.
  for (const dir of ['a', 'b']) removeRelocated(relocatedDir(path.join(parent, dir)));
});

function stopLeftover(asked: string): void {
  const dir = existsSync(relocatedDir(asked)) ? relocatedDir(asked) : asked;
  const file = path.join(dir, 'postmaster.pid');
  if (!existsSync(file)) return;
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    // Only that folder's postmaster: a stale file's pid may since belong to any other process.
    if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(dir)) return;
    process.kill(pid, 'SIGINT');
  } catch {
    // gone already
  }
}

const serve = async (dir: string, port: number) => {
  const p = await startProcess(null, { EMBEDDED_PG_DIR: path.join(parent, dir), EMBEDDED_PG_PORT: String(port) });
  running.push(p);
  return p;
};

async function stopped(p: TesseraProcess): Promise<string> {
  p.child.kill('SIGTERM');
  expect(await p.exited).toBe(0);
  return p.output();
}

const graphql = (p: TesseraProcess) => `http://127.0.0.1:${p.port}/graphql`;
const campaignNames = async (p: TesseraProcess) =>
  (await graphqlData<{ campaigns: { edges: { node: { name: string } }[] } }>(graphql(p), ADMIN_KEY, '{ campaigns(first: 100) { edges { node { name } } } }')).campaigns.edges.map(
    (e) => e.node.name,
  );

test('a second folder on a port another embedded PostgreSQL holds is refused with one line; on ports of their own both serve their own data', async () => {
  const [shared, other] = [await freePort(), await freePort()];
  const a = await serve('a', shared);
  expect(a.output()).toContain('embedded PostgreSQL started');

  const refused = await runToExit(null, { EMBEDDED_PG_DIR: path.join(parent, 'b'), EMBEDDED_PG_PORT: String(shared) }, 60_000);
  expect(refused.code).toBe(1);
  expect(refused.stderr.trim().split('\n')).toEqual([
    expect.stringMatching(
      new RegExp(`^The embedded PostgreSQL of ${parent}/b${PLACED} cannot use port ${shared}: the PostgreSQL of ${parent}/a${PLACED} already listens there\\. Set EMBEDDED_PG_PORT to a free port \\(e\\.g\\. EMBEDDED_PG_PORT=\\d+\\), or stop that one\\.$`),
    ),
  ]);
  expect(refused.stdout).not.toContain('serving');

  const b = await serve('b', other);
  await graphqlData(graphql(a), ADMIN_KEY, 'mutation { createCampaign(input: { name: "only on a" }) { campaign { id } } }');
  await graphqlData(graphql(b), ADMIN_KEY, 'mutation { createCampaign(input: { name: "only on b" }) { campaign { id } } }');
  expect(await campaignNames(a)).toEqual(['only on a']);
  expect(await campaignNames(b)).toEqual(['only on b']);

  expect(await stopped(a)).toContain('embedded PostgreSQL stopped');
  expect(await stopped(b)).toContain('embedded PostgreSQL stopped');
  expect([await accepts(shared), await accepts(other)]).toEqual([false, false]);
}, 180_000);

test("a killed process's embedded PostgreSQL is joined by the next start of its folder, and refused to another folder and to another port", async () => {
  const port = await freePort();
  const killed = await serve('a', port);
  await graphqlData(graphql(killed), ADMIN_KEY, 'mutation { createCampaign(input: { name: "before the kill" }) { campaign { id } } }');
  killed.child.kill('SIGKILL');
  await killed.exited;
  expect(await accepts(port)).toBe(true);

  const elsewhere = await runToExit(null, { EMBEDDED_PG_DIR: path.join(parent, 'b'), EMBEDDED_PG_PORT: String(port) }, 60_000);
  expect(elsewhere.code).toBe(1);
  expect(elsewhere.stderr).toMatch(new RegExp(`the PostgreSQL of ${parent}/a${PLACED} already listens there`));
  const otherPort = await freePort();
  const moved = await runToExit(null, { EMBEDDED_PG_DIR: path.join(parent, 'a'), EMBEDDED_PG_PORT: String(otherPort) }, 60_000);
  expect(moved.code).toBe(1);
  expect(moved.stderr.trim()).toMatch(new RegExp(`^The embedded PostgreSQL of ${parent}/a${PLACED} already runs on port ${port} \\(pid \\d+\\), not ${otherPort}: set EMBEDDED_PG_PORT=${port} to use it`));

  const next = await serve('a', port);
  expect(next.output()).toContain('joined the embedded PostgreSQL');
  expect(await campaignNames(next)).toEqual(['before the kill']);
  // The killed one is no user any more: the one left stops the server.
  expect(await stopped(next)).toContain('embedded PostgreSQL stopped');
  expect(await accepts(port)).toBe(false);
}, 180_000);

/** A process using the embedded PostgreSQL of `dir` as globalSetup does, with no connection open; `release` on stdin releases it (with `releaseOptions`). */
function user(dir: string, port: number, releaseOptions: { removeRelocated?: boolean } = {}) {
  const code = `
    const { startEmbeddedPostgres } = require('./src/db/embedded');
    const readline = require('node:readline');
    startEmbeddedPostgres({ dir: ${JSON.stringify(dir)}, port: ${port}, portSetting: 'TESSERA_TEST_EMBEDDED_PORT' }).then((pg) => {
      console.log(JSON.stringify({ owned: pg.owned }));
      readline.createInterface({ input: process.stdin }).on('line', async () => console.log(JSON.stringify({ stopped: await pg.release(${JSON.stringify(releaseOptions)}) })));
    }, (error) => console.log(JSON.stringify({ error: error.message })));`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', code], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => JSON.parse((await lines.next()).value as string) as Record<string, unknown>;
  return {
    next,
    release: async () => {
      child.stdin.write('release\n');
      const answer = await next();
      child.kill();
      return answer;
    },
  };
}

test('two runs on one folder (two `npm test` of one checkout): the second joins, the first out leaves the server up, the last out stops it', async () => {
  const port = await freePort();
  const dir = path.join(parent, 'a');
  const first = user(dir, port);
  expect(await first.next()).toEqual({ owned: true });
  const second = user(dir, port);
  expect(await second.next()).toEqual({ owned: false });
  expect(await first.release()).toEqual({ stopped: false });
  expect(await accepts(port)).toBe(true);
  expect(await second.release()).toEqual({ stopped: true });
  expect(await accepts(port)).toBe(false);

  // Another checkout's run on that port is told which variable moves it.
  const third = user(dir, port);
  expect(await third.next()).toEqual({ owned: true });
  const elsewhere = user(path.join(parent, 'b'), port);
  expect(await elsewhere.next()).toEqual({ error: expect.stringMatching(/cannot use port \d+: the PostgreSQL of .*\/a(?: \(its data in [^)]*\))? already listens there\. Set TESSERA_TEST_EMBEDDED_PORT to a free port/) });
  expect(await third.release()).toEqual({ stopped: true });
}, 180_000);

test("as root in a folder PostgreSQL's OS user cannot enter, npm test's server keeps its data under /var/lib/tessera, and the last run out deletes it", async () => {
  if (process.getuid?.() !== 0) return console.warn('skipped: the data is placed under /var/lib/tessera only as root');
  const closed = path.join(parent, 'closed');
  mkdirSync(closed);
  chmodSync(closed, 0o700);
  const asked = path.join(closed, '.tessera', 'test-pgdata');
  const placed = relocatedDir(asked);
  const port = await freePort();
  const run = user(asked, port, { removeRelocated: true });
  try {
    expect(await run.next()).toEqual({ owned: true });
    expect(existsSync(path.join(placed, 'PG_VERSION'))).toBe(true);
    expect(readFileSync(`${placed}.asked`, 'utf8')).toBe(asked);
    // Another folder's server on that port is told where this one's data really is.
    const clash = user(path.join(parent, 'b'), port);
    expect(await clash.next()).toEqual({ error: expect.stringContaining(`the PostgreSQL of ${asked} (its data in ${placed}) already listens there`) });
    expect(await run.release()).toEqual({ stopped: true });
    expect(await accepts(port)).toBe(false);
    expect([placed, `${placed}.asked`, `${placed}.log`, `${placed}.users`, `${placed}.start-lock`].filter((file) => existsSync(file))).toEqual([]);
  } finally {
    stopLeftover(asked);
    removeRelocated(placed);
  }
}, 180_000);

test('a port clash names a data directory root placed elsewhere by the folder it stands for and where its data is', async () => {
  // The note beside a placed data directory (embeddedPlacement.ts) is all it takes: no server is started.
  const placed = path.join(parent, 'app-pgdata-0123456789ab');
  writeFileSync(`${placed}.asked`, '/root/app/.tessera/pgdata');
  const message = await portTaken(placed, 1, { kind: 'postgres', dataDir: path.join(parent, 'other') }, 'EMBEDDED_PG_PORT');
  expect(message).toMatch(
    new RegExp(`^The embedded PostgreSQL of /root/app/\\.tessera/pgdata \\(its data in ${placed}\\) cannot use port 1: the PostgreSQL of ${parent}/other already listens there\\. Set EMBEDDED_PG_PORT to a free port`),
  );
});
