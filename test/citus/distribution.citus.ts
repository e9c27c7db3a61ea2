// Tessera on a real three-node Citus cluster (npm run test:citus): the migrator places every table
// (src/db/distribute.ts), migrations keep working on the distributed schema, and the operator's and
// partners' core flow — create, load, open, stats, parallel claims, close — answers as on one
// server, with the pool's invariants and verifyCampaign checked on the coordinator afterwards.
import { cpSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DISTRIBUTION_COLUMN, PLACEMENT } from '../../src/db/distribute';
import { migrate, MIGRATIONS_DIR } from '../../src/db/migrate';
import { CITUS_SKIP_ENV } from '../helpers/globalSetupCitus';
import { ADMIN_KEY, assertPoolInvariants, CLAIM, startTestServer, type ClaimPayload, type TestServer } from '../helpers/testServer';
import { untilSessionsWaitForLock } from '../helpers/time';

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

  test('the gate is one lock on the coordinator: close waits for a claim in flight there, and that claim commits before close returns', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(3);
    const inFlight = await server.sql.connect();
    try {
      // A claim in flight holds the gate shared (from the coordinator, where Tessera's claims run it).
      await inFlight.query('BEGIN');
      await inFlight.query(`SELECT * FROM tessera_claim_gate($1, $2, 'slow', NULL, 1, 1)`, [campaignId, partner.id]);
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
