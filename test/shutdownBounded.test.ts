// A shutdown that always ends, and a server that survives losing its log reader. The server is
// spawned as a supervisor would, its stdout and stderr piped to this process; "the reader goes
// away" is this process closing its ends of those pipes. Each case runs several times: the hang it
// guards against was intermittent (docs/RELIABILITY.md).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { postGraphQL } from './helpers/graphql';
import { ROOT, startProcess, type TesseraProcess } from './helpers/process';
import { ADMIN_KEY, CLAIM, createTestDatabase } from './helpers/testServer';
import { FIXED_WORK_TIMEOUT_MS, sleep, until } from './helpers/time';

const GRACE_MS = 3_000;
const TRIALS = 4;

let database: { url: string; drop(): Promise<void> };
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.drop());

const post = (port: number, key: string, query: string, variables?: unknown) =>
  postGraphQL<any>(`http://127.0.0.1:${port}/graphql`, key, query, variables, { timeoutMs: 10_000 });

/** Closes this process's ends of the server's stdout and stderr: its log reader is gone. */
function dropReader(server: TesseraProcess): void {
  server.child.stdout!.destroy();
  server.child.stderr!.destroy();
}

/** The time from `signal` to the process's exit (its 'exit' event, not its pipes' close), and its exit code. */
async function stopTimed(server: TesseraProcess, signal: NodeJS.Signals): Promise<{ ms: number; code: number | null }> {
  const exit = new Promise<{ at: number; code: number | null }>((resolve) => {
    if (server.child.exitCode !== null || server.child.signalCode !== null) resolve({ at: performance.now(), code: server.child.exitCode });
    else server.child.once('exit', (code) => resolve({ at: performance.now(), code }));
  });
  const started = performance.now();
  server.child.kill(signal);
  const exited = await Promise.race([exit, sleep(GRACE_MS + 10_000).then(() => 'hung' as const)]);
  if (exited === 'hung') {
    server.child.kill('SIGKILL');
    throw new Error(`the server was still running ${Math.round(performance.now() - started)} ms after ${signal}`);
  }
  return { ms: exited.at - started, code: exited.code };
}

describe.each([
  ['SIGTERM', {}],
  ['SIGINT', {}],
  ['SIGTERM', { WEB_CONCURRENCY: '2' }],
] as const)('%s with the log reader gone (%j)', (signal, env) => {
  test.each(Array.from({ length: TRIALS }, (_, i) => i + 1))(`trial %i: exits within SHUTDOWN_GRACE_MS + 2 s`, async () => {
    const server = await startProcess(database.url, { SHUTDOWN_GRACE_MS: String(GRACE_MS), ...env });
    try {
      dropReader(server);
      // Requests after the reader is gone: every one of them writes a log line into the closed pipe.
      for (let i = 0; i < 5; i += 1) expect((await post(server.port, ADMIN_KEY, '{ __typename }')).status).toBe(200);
      const { ms } = await stopTimed(server, signal);
      expect(ms).toBeLessThan(GRACE_MS + 2_000);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, FIXED_WORK_TIMEOUT_MS);
});

test('the watchdog ends a process whose main thread never returns', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', `require(${JSON.stringify(path.join(ROOT, 'src/watchdog.ts'))}).armShutdownWatchdog(500); for (;;) {}`], {
    cwd: ROOT,
    stdio: 'ignore',
  });
  const started = performance.now();
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, sig) => resolve(sig)));
  expect(signal).toBe('SIGKILL');
  expect(performance.now() - started).toBeLessThan(10_000);
});

test('a log reader that stops reading does not stall claims: lines are dropped and counted', async () => {
  const server = await startProcess(database.url, { SHUTDOWN_GRACE_MS: String(GRACE_MS) });
  try {
    const { port } = server;
    const partner = (await post(port, ADMIN_KEY, 'mutation { createPartner(input: { name: "P" }) { apiKey } }')).body.data.createPartner;
    const campaignId = (await post(port, ADMIN_KEY, 'mutation { createCampaign(input: { name: "C" }) { campaign { id } } }')).body.data.createCampaign.campaign.id;
    await post(port, ADMIN_KEY, `mutation { generateTickets(campaignId: "${campaignId}", count: 100000) { loaded } }`);
    await post(port, ADMIN_KEY, `mutation { openCampaign(id: "${campaignId}") { campaign { id } } }`);
    const dropped = async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return Number(/tessera_log_lines_dropped_total\{reason="full"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    expect(await dropped()).toBe(0);

    // The reader stops: nothing more is read from the server's stdout.
    server.child.stdout!.pause();
    let claimed = 0;
    let refused = 0;
    const client = async (n: number) => {
      while (!(await dropped())) {
        for (let i = 0; i < 20; i += 1) {
          const answer = await post(port, partner.apiKey, CLAIM, { input: { campaignId, holder: `h-${n}-${i}` } });
          if (answer.body.data?.claimTicket.allocation) claimed += 1;
          else refused += 1;
        }
      }
    };
    await Promise.all(Array.from({ length: 64 }, (_, n) => client(n)));
    expect(await dropped()).toBeGreaterThan(0);
    expect(refused).toBe(0);
    // Claims are still answered with the reader stopped.
    const before = claimed;
    await Promise.all(Array.from({ length: 64 }, (_, n) => post(port, partner.apiKey, CLAIM, { input: { campaignId, holder: `late-${n}` } }).then((a) => a.body.data.claimTicket.allocation && (claimed += 1))));
    expect(claimed - before).toBe(64);
    await until(async () => (await dropped()) > 0, { message: 'dropped lines to be counted' });
    const { ms, code } = await stopTimed(server, 'SIGTERM');
    expect(code).toBe(0);
    expect(ms).toBeLessThan(GRACE_MS + 2_000);
  } finally {
    server.child.kill('SIGKILL');
  }
}, FIXED_WORK_TIMEOUT_MS);
