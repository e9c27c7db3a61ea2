// A server whose database goes away after start says so once per change of state (issue 28): the
// hold sweeper ticks every 200 ms here, and before src/reachability.ts each tick logged "hold
// sweeper: sweep failed" for as long as the database was gone. The database is taken away by a
// proxy in front of PostgreSQL that freezes (test/helpers/freezableProxy.ts) — the pool gives up on
// it (src/db/stallWatch.ts) and every later query fails — and brought back by thawing it.
import pino from 'pino';
import { startFreezableProxy, type FreezableProxy } from './helpers/freezableProxy';
import { SERVER_ENV } from './helpers/env';
import { createTestDatabase, startTestServer, type TestServer } from './helpers/testServer';
import { sleep, until } from './helpers/time';

let proxy: FreezableProxy;
let server: TestServer;
let dropDatabase: () => Promise<void>;
const lines: Array<{ level: number; msg: string }> = [];

beforeAll(async () => {
  const database = await createTestDatabase();
  dropDatabase = database.drop;
  const serverUrl = new URL(process.env[SERVER_ENV]!);
  proxy = await startFreezableProxy({ host: serverUrl.hostname, port: Number(serverUrl.port || 5432) });
  const viaProxy = new URL(database.url);
  viaProxy.port = String(proxy.port);
  viaProxy.hostname = '127.0.0.1';
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  server = await startTestServer({ databaseUrl: viaProxy.toString(), logger, config: { holdSweepIntervalMs: 200 } });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await proxy?.close();
  await dropDatabase?.();
});

const said = (msg: string | RegExp) => lines.filter((l) => (typeof msg === 'string' ? l.msg === msg : msg.test(l.msg)));

test('an unreachable database is logged once, not once per sweep, and its return once', async () => {
  await sleep(600); // a few sweeps that succeed
  expect(said(/database unreachable/)).toHaveLength(0);
  proxy.freeze();
  await until(() => said(/database unreachable/).length > 0, { message: 'the outage to be logged', timeoutMs: 20_000, intervalMs: 100 });
  // Many sweep intervals later (200 ms each, every sweep failing): still one line.
  await sleep(4_000);
  expect(said(/database unreachable/)).toHaveLength(1);
  expect(said('hold sweeper: sweep failed; next interval retries')).toHaveLength(0);
  proxy.thaw();
  await until(() => said('database reachable again').length > 0, { message: 'the return to be logged', timeoutMs: 20_000, intervalMs: 100 });
  await sleep(1_000);
  expect(said('database reachable again')).toHaveLength(1);
  expect(said(/database unreachable/)).toHaveLength(1);
}, 60_000);
