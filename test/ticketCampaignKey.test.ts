// @dialects postgresql citus
// tickets.campaign_id → campaigns.id holds without a per-row foreign key (issue 30: the key's check,
// one query per inserted ticket, was half a bulk load's time). The rule is now kept per statement
// (prisma/functions/tessera_count_tickets.sql, tessera_ticket_campaign_key.sql); these are the
// foreign key's own guarantees, errors included, checked against the database itself — and that
// campaign ids come in creation order (tessera_uuid_v7), which puts a new campaign's tickets at the
// end of every index that starts with campaign_id.
import { Client, Pool } from 'pg';
import { citusNodes } from './helpers/citus';
import { createTestDatabase } from './helpers/testServer';
import { sleep, untilSessionsWaitForLock } from './helpers/time';

/** npm run test:citus runs this file too: there the rule is kept by the same functions, on the shards. */
const citus = citusNodes() !== null;

let db: { url: string; drop(): Promise<void> };
/** Two sessions that race (named as Tessera's, which the lock watcher looks for), and a pool that watches them. */
let a: Client;
let b: Client;
let watcher: Pool;
beforeAll(async () => {
  db = await createTestDatabase({ migrated: true });
  [a, b] = [0, 1].map(() => new Client({ connectionString: db.url, application_name: 'tessera' }));
  for (const client of [a, b]) await client.connect();
  watcher = new Pool({ connectionString: db.url, max: 1 });
});
afterAll(async () => {
  for (const client of [a, b]) await client.end();
  await watcher.end();
  await db.drop();
});

async function campaign(client: Client = a): Promise<string> {
  const { rows } = await client.query<{ id: string }>(`INSERT INTO campaigns (name) VALUES ('key test') RETURNING id`);
  return rows[0].id;
}

interface DbError {
  code?: string;
  constraint?: string;
  message: string;
}

/**
 * What a refusal by the rule looks like to a driver: the foreign key's SQLSTATE and constraint. On
 * Citus the worker's error reaches the client without the constraint field, and as XX000 when the
 * statement spanned shards; its message still names the key.
 */
function keyViolation(error: DbError | null): string {
  if (!error) return 'no error';
  if (citus) return /tickets_campaign_id_fkey/.test(error.message) && ['23503', 'XX000'].includes(error.code ?? '') ? 'violates the key' : `${error.code} ${error.message}`;
  return error.code === '23503' && error.constraint === 'tickets_campaign_id_fkey' ? 'violates the key' : `${error.code} ${error.message}`;
}

async function failure(client: Client, sql: string, values: unknown[] = []): Promise<string> {
  return keyViolation(await client.query(sql, values).then(() => null, (e: DbError) => e));
}

const FK = 'violates the key';
const MISSING = '00000000-0000-4000-8000-000000000000';

test('a ticket of a missing campaign is refused, alone or beside tickets of an existing one, and nothing is written', async () => {
  expect(await failure(a, `INSERT INTO tickets (campaign_id, code) VALUES ($1, 'T-1')`, [MISSING])).toBe(FK);
  const id = await campaign();
  // One statement with tickets of an existing and of a missing campaign: refused whole.
  expect(
    await failure(a, `INSERT INTO tickets (campaign_id, code) SELECT c::uuid, 'M-' || c FROM unnest($1::text[]) c`, [[id, MISSING]]),
  ).toBe(FK);
  const { rows } = await a.query(`SELECT count(*)::int AS n FROM tickets WHERE campaign_id = ANY($1::uuid[])`, [[id, MISSING]]);
  expect(rows[0].n).toBe(0);
  const counted = await a.query(`SELECT coalesce(sum(total), 0)::int AS n FROM campaign_counters WHERE campaign_id = ANY($1::uuid[])`, [[id, MISSING]]);
  expect(counted.rows[0].n).toBe(0);
});

test('a campaign with tickets cannot be deleted nor change its id; one without can; a ticket does not move', async () => {
  const kept = await campaign();
  await a.query(`INSERT INTO tickets (campaign_id, code) VALUES ($1, 'K-1')`, [kept]);
  expect(await failure(a, `DELETE FROM campaigns WHERE id = $1`, [kept])).toBe(FK);
  expect(await failure(a, `UPDATE campaigns SET id = $2 WHERE id = $1`, [kept, MISSING])).toBe(FK);
  // Other updates of the campaign are untouched by the rule, an unchanged id included.
  await a.query(`UPDATE campaigns SET name = 'renamed', id = id WHERE id = $1`, [kept]);
  const other = await campaign();
  // (Citus refuses any change of a distribution column before the rule is asked.)
  const move = await a.query(`UPDATE tickets SET campaign_id = $2 WHERE campaign_id = $1`, [kept, other]).then(() => null, (e: DbError) => e);
  if (citus) expect(move?.code).toBe('0A000');
  else expect(keyViolation(move)).toBe(FK);
  await a.query(`DELETE FROM campaigns WHERE id = $1`, [other]);
  expect((await a.query(`SELECT name FROM campaigns WHERE id = $1`, [kept])).rows).toEqual([{ name: 'renamed' }]);
});

test('an insert and a delete of its campaign in flight at once: whichever commits first wins, the other is refused', async () => {
  // Insert first: the delete waits for the insert's lock (FOR KEY SHARE), then sees its tickets.
  const first = await campaign();
  await a.query('BEGIN');
  await a.query(`INSERT INTO tickets (campaign_id, code) VALUES ($1, 'R-1')`, [first]);
  const deleting = failure(b, `DELETE FROM campaigns WHERE id = $1`, [first]);
  await untilSessionsWaitForLock(watcher, 1, { message: 'the delete waits for the insert' });
  await a.query('COMMIT');
  expect(await deleting).toBe(FK);

  // Delete first: the insert's check waits for the delete, then finds no campaign.
  const second = await campaign();
  await b.query('BEGIN');
  await b.query(`DELETE FROM campaigns WHERE id = $1`, [second]);
  const inserting = failure(a, `INSERT INTO tickets (campaign_id, code) VALUES ($1, 'R-2')`, [second]);
  await untilSessionsWaitForLock(watcher, 1, { message: 'the insert waits for the delete' });
  await b.query('COMMIT');
  expect(await inserting).toBe(FK);
  const { rows } = await a.query(`SELECT count(*)::int AS n FROM tickets WHERE campaign_id = $1`, [second]);
  expect(rows[0].n).toBe(0);
});

test('campaign ids are UUID version 7, in the order campaigns were made', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) {
    ids.push(await campaign());
    await sleep(2); // a new millisecond: version 7 orders by it
  }
  for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect([...ids].sort()).toEqual(ids);
  // The first 48 bits are the time it was made, in milliseconds.
  const ms = parseInt(ids[0].replace(/-/g, '').slice(0, 12), 16);
  expect(Math.abs(ms - Date.now())).toBeLessThan(60_000);
  expect(new Set(ids).size).toBe(ids.length);
});
