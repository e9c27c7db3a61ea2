// SIGTERM: the real `npm start` process stops accepting, lets the claim in flight finish, closes
// its pool and exits 0.
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Pool } from 'pg';
import { withClient } from './helpers/env';
import { postGraphQL } from './helpers/graphql';
import { accepts, childrenOf, freePort, ROOT, startProcess, untilEveryWorkerServes } from './helpers/process';
import { ADMIN_KEY, assertPoolInvariants, CLAIM, createTestDatabase } from './helpers/testServer';
import { FIXED_WORK_TIMEOUT_MS, until, untilSessionsWaitForLock } from './helpers/time';

test('SIGTERM lets an in-flight claim finish, refuses new connections, and exits 0', async () => {
  const database = await createTestDatabase();
  const { child, port, exited } = await startProcess(database.url);
  const post = (key: string, query: string, variables?: unknown) => postGraphQL<any>(`http://127.0.0.1:${port}/graphql`, key, query, variables);
  // Sessions looked at from outside the blocker's transaction (which would see one snapshot of them).
  const observer = new Pool({ connectionString: database.url, max: 1 });
  observer.on('error', () => undefined);
  try {
    const partner = (await post(ADMIN_KEY, 'mutation { createPartner(input: { name: "P" }) { partner { id } apiKey } }')).body.data!.createPartner;
    const campaignId = (await post(ADMIN_KEY, 'mutation { createCampaign(input: { name: "C" }) { campaign { id } } }')).body.data!.createCampaign.campaign.id;
    await post(ADMIN_KEY, `mutation { generateTickets(campaignId: "${campaignId}", count: 5) { loaded } }`);
    await post(ADMIN_KEY, `mutation { openCampaign(id: "${campaignId}") { campaign { id } } }`);

    await withClient(database.url, async (blocker) => {
      // Hold the campaign gate exclusively (as a close would): the claim below waits in flight.
      await blocker.query('BEGIN');
      await blocker.query('SELECT pg_advisory_xact_lock(1, hashtext($1::uuid::text))', [campaignId]);
      const inFlight = post(partner.apiKey, CLAIM, { input: { campaignId, holder: 'in-flight' } });
      await untilSessionsWaitForLock(observer, 1, { message: 'the claim to wait for the campaign gate' });
      child.kill('SIGTERM');
      // While the claim still waits, the listener closes: a new connection is refused.
      await until(() => fetch(`http://127.0.0.1:${port}/healthz`).then(() => false, () => true), {
        message: 'new connections to be refused after SIGTERM',
        timeoutMs: 5_000,
        intervalMs: 20,
      });
      await untilSessionsWaitForLock(observer, 1, { message: 'the claim to be waiting still', timeoutMs: 0 });
      await blocker.query('ROLLBACK');
      const answer = await inFlight;
      expect(answer.status).toBe(200);
      expect(answer.body.data!.claimTicket.allocation.holder).toBe('in-flight');
    });
    expect(await exited).toBe(0);
    await withClient(database.url, async (c) => {
      const { rows } = await c.query(`SELECT count(*)::int AS n FROM allocations WHERE holder = 'in-flight'`);
      expect(rows[0].n).toBe(1);
    });
  } finally {
    child.kill('SIGKILL');
    await observer.end();
    await database.drop();
  }
});

test('without DATABASE_URL the server starts its embedded PostgreSQL, and SIGTERM stops both', async () => {
  // Under the project folder: PostgreSQL runs as its own OS user and must be able to reach it.
  // (.tessera exists only once an embedded PostgreSQL has run here: not on a fresh checkout.)
  mkdirSync(path.join(ROOT, '.tessera'), { recursive: true });
  const parent = mkdtempSync(path.join(ROOT, '.tessera', 'shutdown-'));
  chmodSync(parent, 0o755); // mkdtemp makes it 0700: PostgreSQL's own OS user could not enter it
  const dir = path.join(parent, 'pgdata');
  // A port free now: a fixed one would meet another run's server (two checkouts, or a killed run's leftover).
  const pgPort = await freePort();
  const { child, port, exited } = await startProcess(null, { EMBEDDED_PG_DIR: dir, EMBEDDED_PG_PORT: String(pgPort) });
  try {
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    expect(await accepts(pgPort)).toBe(true);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(await accepts(pgPort)).toBe(false);
  } finally {
    child.kill('SIGKILL');
    rmSync(parent, { recursive: true, force: true });
  }
}, FIXED_WORK_TIMEOUT_MS);

test('WEB_CONCURRENCY=2: two workers serve one port, a SIGKILLed worker is replaced, SIGTERM stops the cluster', async () => {
  const database = await createTestDatabase();
  const { child, port, exited } = await startProcess(database.url, { WEB_CONCURRENCY: '2' });
  // A connection handed to the worker as it is killed may never be answered: a client's timeout.
  const post = (key: string, query: string, variables?: unknown) =>
    postGraphQL<any>(`http://127.0.0.1:${port}/graphql`, key, query, variables, { timeoutMs: 10_000 }).then((r) => r.body);
  const workers = () => childrenOf(child.pid!);
  try {
    await untilEveryWorkerServes(child.pid!, port, 2);
    const partner = (await post(ADMIN_KEY, 'mutation { createPartner(input: { name: "P" }) { apiKey } }')).data.createPartner;
    const campaignId = (await post(ADMIN_KEY, 'mutation { createCampaign(input: { name: "C" }) { campaign { id } } }')).data.createCampaign.campaign.id;
    await post(ADMIN_KEY, `mutation { generateTickets(campaignId: "${campaignId}", count: 20) { loaded } }`);
    await post(ADMIN_KEY, `mutation { openCampaign(id: "${campaignId}") { campaign { id } } }`);
    const claim = (holder: string) => post(partner.apiKey, CLAIM, { input: { campaignId, holder } });

    const [victim] = workers();
    const storm = Array.from({ length: 15 }, (_, i) => claim(`a-${i}`));
    process.kill(victim!, 'SIGKILL');
    const settled = await Promise.allSettled(storm);
    const acknowledged = settled.flatMap((r) => (r.status === 'fulfilled' && r.value.data?.claimTicket.allocation ? [r.value.data.claimTicket.allocation.id] : []));
    await until(() => workers().length === 2 && !workers().includes(victim!), { message: 'the killed worker to be replaced' });
    const after = await Promise.all(Array.from({ length: 15 }, (_, i) => claim(`b-${i}`)));
    expect(after.some((r) => r.data?.claimTicket.allocation)).toBe(true);

    await withClient(database.url, async (c) => {
      // No ticket twice, every allocated ticket with its one allocation, nothing beyond the 20.
      expect(await assertPoolInvariants(c, campaignId)).toMatchObject({ total: 20 });
      const found = await c.query('SELECT count(*)::int AS n FROM allocations WHERE id = ANY($1::uuid[])', [acknowledged]);
      expect(found.rows[0].n).toBe(acknowledged.length);
    });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  } finally {
    child.kill('SIGKILL');
    await database.drop();
  }
}, FIXED_WORK_TIMEOUT_MS);
