// Tessera on a real three-node Citus cluster (npm run test:citus): the migrator places every table
// (src/db/distribute.ts), migrations keep working on the distributed schema, and the operator's and
// partners' core flow — create, load, open, stats, parallel claims, close — answers as on one
// server, with the pool's invariants and verifyCampaign checked on the coordinator afterwards.
import { cpSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DELEGATED, DISTRIBUTION_COLUMN, PLACEMENT } from '../../src/db/distribute';
import { migrate, MIGRATIONS_DIR } from '../../src/db/migrate';
import { CITUS_SKIP_ENV } from '../helpers/globalSetupCitus';
import { ADMIN_KEY, assertPoolInvariants, CLAIM, startTestServer, type ClaimPayload, type TestServer } from '../helpers/testServer';
import { citusNodes } from '../helpers/citus';
import { databaseUrl, withClient } from '../helpers/env';
import { until, untilSessionsWaitForLock } from '../helpers/time';

const skip = process.env[CITUS_SKIP_ENV];
const describeCitus = skip ? describe.skip : describe;

describeCitus('Tessera on Citus', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ database: { poolSize: 20 } });
  });
  afterAll(() => server?.stop());

  test('the migrator placed every table: reference tables, and campaign-scoped tables distributed by campaign_id, colocated with tickets', async () => {
    const { rows } = await server.sql.query<{ name: string; method: string; column: string | null; colocation: number }>(
      `SELECT logicalrelid::text AS name, partmethod AS method,
              CASE WHEN partmethod = 'h' THEN column_to_column_name(logicalrelid, partkey) END AS column,
              colocationid AS colocation
         FROM pg_dist_partition`,
    );
    const placed = new Map(rows.map((row) => [row.name, row]));
    expect([...placed.keys()].sort()).toEqual([...PLACEMENT.keys()].sort());
    const tickets = placed.get('tickets')!;
    for (const [name, placement] of PLACEMENT) {
      const row = placed.get(name)!;
      if (placement.kind === 'reference') {
        expect({ name, method: row.method }).toEqual({ name, method: 'n' });
      } else {
        expect({ name, method: row.method, column: row.column, colocation: row.colocation }).toEqual({
          name,
          method: 'h',
          column: DISTRIBUTION_COLUMN,
          colocation: tickets.colocation,
        });
      }
    }
  });

  test('a migration after distribution applies to the distributed tables, on every shard', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tessera-citus-migrations-'));
    try {
      cpSync(MIGRATIONS_DIR, dir, { recursive: true });
      mkdirSync(path.join(dir, '29991231000000_ticket_note'));
      writeFileSync(
        path.join(dir, '29991231000000_ticket_note', 'migration.sql'),
        'ALTER TABLE tickets ADD COLUMN note TEXT;\nCREATE INDEX tickets_note_idx ON tickets (campaign_id, note);\n',
      );
      expect(await migrate(server.databaseUrl, dir)).toEqual(['29991231000000_ticket_note']);
      // Every shard of tickets, on both workers, has the column.
      const { rows } = await server.sql.query<{ success: boolean; result: string }>(
        `SELECT success, result FROM run_command_on_shards('tickets', $$SELECT count(*) FROM information_schema.columns WHERE table_name = '%s' AND column_name = 'note'$$)`,
      );
      expect(rows.length).toBeGreaterThan(1);
      expect(rows.every((row) => row.success && row.result === '1')).toBe(true);
      expect(await migrate(server.databaseUrl, dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('create, load, open, parallel claims, stats and close answer as on one server: nothing over-, under- or double-allocated', async () => {
    const partners = await Promise.all(['A', 'B'].map((name) => server.createPartner(name)));
    const campaignId = await server.openCampaignWith(30);
    // As a partner's client does: each claim with its idempotency key, asked again while the answer
    // is UNAVAILABLE (retryable: claims are slow on Citus yet, docs/SCALING.md, and a busy machine
    // fills the claim queue); the key makes every retry the same claim.
    const claimWithRetries = async (i: number) => {
      for (let attempt = 1; ; attempt += 1) {
        const r = await server.gql<ClaimPayload>(partners[i % 2]!.apiKey, CLAIM, { input: { campaignId, holder: `user-${i}`, metadata: { i }, idempotencyKey: `k-${i}` } });
        const unavailable = r.body.errors?.some((e) => (e.extensions as { code?: string } | undefined)?.code === 'UNAVAILABLE');
        if (!unavailable || attempt >= 30) return r;
        await new Promise((resolve) => setTimeout(resolve, 200 * Math.min(attempt, 5)));
      }
    };
    const results = await Promise.all(Array.from({ length: 45 }, (_, i) => claimWithRetries(i)));
    expect(results.map((r) => r.body.errors ?? null).filter(Boolean)).toEqual([]);
    const granted = results.filter((r) => r.body.data?.claimTicket.allocation);
    const soldOut = results.filter((r) => r.body.data?.claimTicket.error?.code === 'SOLD_OUT');
    expect(granted).toHaveLength(30);
    expect(soldOut).toHaveLength(15);
    expect(new Set(granted.map((r) => r.body.data!.claimTicket.allocation!.ticket.code)).size).toBe(30);
    const stored = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId]);
    expect(stored.rows[0].n).toBe(30);

    const stats = await server.gql<{ campaign: { stats: { total: number; allocated: number; available: number; soldOut: boolean } } }>(
      ADMIN_KEY,
      'query($id: ID!) { campaign(id: $id) { stats { total allocated available soldOut } } }',
      { id: campaignId },
    );
    expect(stats.body.data?.campaign.stats).toEqual({ total: 30, allocated: 30, available: 0, soldOut: true });
    await assertPoolInvariants(server.sql, campaignId);

    const closed = await server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { status } } }', { id: campaignId });
    expect(closed.body).toEqual({ data: { closeCampaign: { campaign: { status: 'CLOSED' } } } });
    const late = await server.gql<ClaimPayload>(partners[0]!.apiKey, CLAIM, { input: { campaignId, holder: 'late' } });
    expect(late.body.data?.claimTicket.error?.code).toBe('CAMPAIGN_NOT_OPEN');
    const order = await server.sql.query(
      'SELECT (SELECT closed_at FROM campaigns WHERE id = $1) >= max(allocated_at) AS after FROM allocations WHERE campaign_id = $1',
      [campaignId],
    );
    expect(order.rows[0].after).toBe(true);
  });

  /** The node (host:port) holding the campaign's shard of tickets. */
  const nodeOf = async (campaignId: string): Promise<string> =>
    (
      await server.sql.query(
        `SELECT p.nodename || ':' || p.nodeport AS node FROM pg_dist_placement pl JOIN pg_dist_node p ON p.groupid = pl.groupid
          WHERE pl.shardid = get_shard_id_for_distribution_column('tickets', $1::uuid)`,
        [campaignId],
      )
    ).rows[0].node;

  test('a claim runs whole on the node holding its campaign: EXPLAIN of the first look, of a group of one campaign and of the general claim shows one task there, in a transaction too, and so does the gate lock of close', async () => {
    const partner = await server.createPartner();
    const campaignIds = [await server.openCampaignWith(2), await server.openCampaignWith(2), await server.openCampaignWith(2)];
    const delegated = await server.sql.query(
      `SELECT p.proname AS name FROM pg_dist_object o JOIN pg_proc p ON p.oid = o.objid
        WHERE o.classid = 'pg_proc'::regclass AND o.distribution_argument_index IS NOT NULL AND o.force_delegation ORDER BY 1`,
    );
    expect(delegated.rows.map((r) => r.name)).toEqual([...DELEGATED.keys()].sort());
    const client = await server.sql.connect();
    try {
      for (const campaignId of campaignIds) {
        for (const inTransaction of [false, true]) {
          if (inTransaction) await client.query('BEGIN');
          const claim = await client.query(
            `EXPLAIN (COSTS OFF) SELECT * FROM tessera_claim_one($1::uuid, $2::uuid, 'h', NULL, NULL, NULL, 0, false)`,
            [campaignId, partner.id],
          );
          const general = await client.query(
            `EXPLAIN (COSTS OFF) SELECT * FROM tessera_claim_tickets($1::uuid, $2::uuid, 'h', NULL, NULL, NULL, 2, 60, 0, false, false)`,
            [campaignId, partner.id],
          );
          const group = await client.query(
            `EXPLAIN (COSTS OFF) SELECT * FROM tessera_claim_campaign_group($1::uuid, ARRAY[$2::uuid, $2::uuid], '{a,b}', '{NULL,NULL}', '{NULL,k}', '{NULL,h}', 0, false)`,
            [campaignId, partner.id],
          );
          const lock = await client.query('EXPLAIN (COSTS OFF) SELECT tessera_lock_campaign_gate($1::uuid)', [campaignId]);
          if (inTransaction) await client.query('ROLLBACK');
          for (const plan of [claim, general, group, lock]) {
            const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
            expect(text).toMatch(/Task Count: 1\n/);
            expect(text).not.toMatch(/Subplan/);
            const [, host, port] = /Node: host=(\S+) port=(\d+)/.exec(text)!;
            expect(`${host}:${port}`).toBe(await nodeOf(campaignId));
          }
        }
      }
    } finally {
      client.release();
    }
    // And it claims there: the three campaigns sell out, each allocation numbered from 1.
    for (const campaignId of campaignIds) {
      for (const holder of ['a', 'b']) {
        const r = await server.gql<ClaimPayload>(partner.apiKey, CLAIM, { input: { campaignId, holder } });
        expect(r.body.data?.claimTicket.allocation).toBeTruthy();
      }
      const numbers = await server.sql.query('SELECT sequence::int AS n FROM allocations WHERE campaign_id = $1 ORDER BY 1', [campaignId]);
      expect(numbers.rows.map((r) => r.n)).toEqual([1, 2]);
      await assertPoolInvariants(server.sql, campaignId);
    }
  });

  test("a partner's idempotency key names one claim across campaigns on different nodes: the same request again is the same allocation, another campaign is IDEMPOTENCY_KEY_REUSED", async () => {
    const partner = await server.createPartner();
    const first = await server.openCampaignWith(3);
    let other = await server.openCampaignWith(3);
    for (let i = 0; i < 20 && (await nodeOf(other)) === (await nodeOf(first)); i += 1) other = await server.openCampaignWith(3);
    expect(await nodeOf(other)).not.toBe(await nodeOf(first));
    const input = { campaignId: first, holder: 'h', idempotencyKey: 'one-key' };
    const a = await server.gql<ClaimPayload>(partner.apiKey, CLAIM, { input });
    const again = await server.gql<ClaimPayload>(partner.apiKey, CLAIM, { input });
    expect(again.body.data?.claimTicket.allocation?.id).toBe(a.body.data?.claimTicket.allocation?.id);
    const elsewhere = await server.gql<ClaimPayload>(partner.apiKey, CLAIM, { input: { ...input, campaignId: other } });
    expect(elsewhere.body.data?.claimTicket.error?.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // Concurrently, one key on two campaigns of two nodes: one claim, the other refused.
    const [x, y] = await Promise.all(
      [first, other].map((campaignId) => server.gql<ClaimPayload>(partner.apiKey, CLAIM, { input: { campaignId, holder: 'h', idempotencyKey: 'raced' } })),
    );
    const outcomes = [x, y].map((r) => r.body.data?.claimTicket.allocation ? 'OK' : r.body.data?.claimTicket.error?.code).sort();
    expect(outcomes).toEqual(['IDEMPOTENCY_KEY_REUSED', 'OK']);
    const stored = await server.sql.query(`SELECT count(*)::int AS n FROM allocations WHERE partner_id = $1 AND idempotency_key IN ('one-key', 'raced')`, [partner.id]);
    expect(stored.rows[0].n).toBe(2);
  });

  test('close waits for a first look in flight on the node holding the campaign, and that claim commits before close returns', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(3);
    const database = (await server.sql.query('SELECT current_database() AS d')).rows[0].d as string;
    const node = await nodeOf(campaignId);
    const nodeUrl = citusNodes()!.find((url) => new URL(url).host === node)!;
    const inFlight = await server.sql.connect();
    try {
      await inFlight.query('BEGIN');
      const claimed = await inFlight.query(`SELECT id FROM tessera_claim_one($1::uuid, $2::uuid, 'slow', NULL, NULL, NULL, 0, false)`, [campaignId, partner.id]);
      expect(claimed.rows[0].id).toBeTruthy();
      let closeDone = false;
      const close = server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { status } } }', { id: campaignId }).then((r) => {
        closeDone = true;
        return r;
      });
      await until(
        () =>
          withClient(databaseUrl(nodeUrl, database), async (c) => {
            const { rows } = await c.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`);
            return rows[0].n >= 1;
          }),
        { timeoutMs: 10_000, intervalMs: 50, message: `closeCampaign to wait for the claim gate on ${node}` },
      );
      expect(closeDone).toBe(false);
      await inFlight.query('COMMIT');
      expect((await close).body).toEqual({ data: { closeCampaign: { campaign: { status: 'CLOSED' } } } });
      const order = await server.sql.query(
        'SELECT (SELECT closed_at FROM campaigns WHERE id = $1) >= max(allocated_at) AS after FROM allocations WHERE campaign_id = $1',
        [campaignId],
      );
      expect(order.rows[0].after).toBe(true);
    } finally {
      inFlight.release();
    }
  });

  test('the gate is one lock on the coordinator for the statements that run there: close waits for a claim in flight there, and that claim commits before close returns', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(3);
    const inFlight = await server.sql.connect();
    try {
      // A claim in flight holds the gate shared (from the coordinator, where Tessera's claims run it).
      await inFlight.query('BEGIN');
      await inFlight.query(`SELECT * FROM tessera_claim_gate($1, $2, 'slow', NULL, 1, 1, false)`, [campaignId, partner.id]);
      let closeDone = false;
      const close = server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { status } } }', { id: campaignId }).then((r) => {
        closeDone = true;
        return r;
      });
      await untilSessionsWaitForLock(server.sql, 1, { message: 'closeCampaign to wait for the claim gate on the coordinator' });
      expect(closeDone).toBe(false);
      await inFlight.query('COMMIT');
      expect((await close).body).toEqual({ data: { closeCampaign: { campaign: { status: 'CLOSED' } } } });
    } finally {
      inFlight.release();
    }
  });
});
