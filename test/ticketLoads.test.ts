// @dialects postgresql citus
// Loads stream their rows through COPY (issue 30: loads at COPY speed), and count what they skip as
// before. generateTickets: the rows arrive in the order of every index they enter; a code that
// collides with one already in the campaign makes the load run again with fresh codes, whole or not
// at all. loadTickets: repeats within a call and codes already in the campaign are duplicates,
// concurrent loads of the same codes load each once, and a code survives COPY's escaping as it was
// given. The campaign key holds for COPY too.
import { Pool } from 'pg';
import { generatedRows, generateTicketsByCopy, loadTicketsByCopy, type RandomFill } from '../src/db/loadTickets';
import { citusNodes } from './helpers/citus';
import { createTestDatabase } from './helpers/testServer';

/** npm run test:citus runs this file too (a COPY into a distributed table). */
const citus = citusNodes() !== null;

let db: { url: string; drop(): Promise<void> };
let pool: Pool;
beforeAll(async () => {
  db = await createTestDatabase({ migrated: true });
  pool = new Pool({ connectionString: db.url, max: 2 });
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});

async function campaign(): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(`INSERT INTO campaigns (name) VALUES ('generate test') RETURNING id`);
  return rows[0].id;
}

/** Fills with start, start + 1, … in reverse order, so the sort has work to do. */
const counting =
  (start: bigint): RandomFill =>
  (values) => {
    for (let i = 0; i < values.length; i += 1) values[i] = start + BigInt(values.length - 1 - i);
  };

async function counts(campaignId: string): Promise<{ rows: number; counted: number }> {
  const { rows } = await pool.query(
    `SELECT (SELECT count(*)::int FROM tickets WHERE campaign_id = $1) AS rows,
            (SELECT coalesce(sum(total), 0)::int FROM campaign_counters WHERE campaign_id = $1) AS counted`,
    [campaignId],
  );
  return rows[0];
}

test('rows come sorted, pick_order is the top 31 bits of the code, repeats are skipped, the prefix is escaped for COPY', () => {
  const values = [0xffff_ffff_ffff_ffffn, 5n, 1n << 40n, 5n];
  const fill: RandomFill = (array) => array.set(values);
  const text = [...generatedRows('c', values.length, 'A\\B-', fill)].join('');
  expect(text.split('\n').filter(Boolean)).toEqual([
    'c\tA\\\\B-0000000000000005\t0',
    'c\tA\\\\B-0000010000000000\t128',
    'c\tA\\\\B-FFFFFFFFFFFFFFFF\t2147483647',
  ]);
  // Real randomness: in code order, pick_order never goes down (the claim's index gets appends).
  const rows = [...generatedRows('c', 10_000, 'G-')].join('').split('\n').filter(Boolean).map((line) => line.split('\t'));
  for (let i = 1; i < rows.length; i += 1) {
    expect(rows[i][1] > rows[i - 1][1]).toBe(true);
    expect(Number(rows[i][2])).toBeGreaterThanOrEqual(Number(rows[i - 1][2]));
  }
});

test('a load whose codes collide with one already in the campaign runs again with fresh codes; after three, it fails and loads nothing', async () => {
  const id = await campaign();
  await pool.query(`INSERT INTO tickets (campaign_id, code) VALUES ($1, 'P-0000000000000003')`, [id]);
  let attempts = 0;
  const colliding: RandomFill = (values) => {
    attempts += 1;
    counting(attempts === 1 ? 1n : 1_000n)(values);
  };
  expect(await generateTicketsByCopy(pool, id, 10, 'P-', colliding)).toBe(10);
  expect(attempts).toBe(2);
  expect(await counts(id)).toEqual({ rows: 11, counted: 11 });

  const always = counting(1n); // P-…0001 to P-…000A: always hits P-…0003
  const error = await generateTicketsByCopy(pool, id, 10, 'P-', always).catch((e: { code?: string; constraint?: string; message: string }) => e);
  if (citus) expect(error).toMatchObject({ code: 'XX000', message: expect.stringMatching(/tickets_campaign_id_code_key_\d+/) });
  else expect(error).toMatchObject({ code: '23505', constraint: 'tickets_campaign_id_code_key' });
  expect(await counts(id)).toEqual({ rows: 11, counted: 11 });
});

test('COPY into a missing campaign is refused by the campaign key, and nothing is written', async () => {
  const missing = '00000000-0000-7000-8000-000000000000';
  const error = await generateTicketsByCopy(pool, missing, 100, 'M-').catch((e: { code?: string; constraint?: string; message: string }) => e);
  // On Citus a COPY's error reaches the client as XX000 with the worker's message.
  if (citus) expect(error).toMatchObject({ code: 'XX000', message: expect.stringContaining('tickets_campaign_id_fkey') });
  else expect(error).toMatchObject({ code: '23503', constraint: 'tickets_campaign_id_fkey' });
  expect(await counts(missing)).toEqual({ rows: 0, counted: 0 });
});

test('a million codes load whole, counted once, distinct', async () => {
  const id = await campaign();
  const loaded = await generateTicketsByCopy(pool, id, 1_000_000, 'BIG-');
  expect(loaded).toBeGreaterThan(999_990);
  expect(await counts(id)).toEqual({ rows: loaded, counted: loaded });
  const { rows } = await pool.query(`SELECT count(DISTINCT code)::int AS codes, count(DISTINCT pick_order)::int > 999000 AS spread FROM tickets WHERE campaign_id = $1`, [id]);
  expect(rows[0]).toEqual({ codes: loaded, spread: true });
}, 120_000);

test('loadTickets: repeats within the call and codes already in the campaign are skipped, and counted by the caller as duplicates', async () => {
  const id = await campaign();
  // Repeats within the call: loaded once.
  expect(await loadTicketsByCopy(pool, id, ['A', 'B', 'A', 'C', 'B'])).toBe(3);
  // Codes already in the campaign: the COPY fails on the first, and the load skips them instead.
  expect(await loadTicketsByCopy(pool, id, ['D', 'A', 'E', 'C', 'E'])).toBe(2);
  expect(await loadTicketsByCopy(pool, id, ['A', 'B'])).toBe(0);
  expect(await counts(id)).toEqual({ rows: 5, counted: 5 });
  const { rows } = await pool.query(`SELECT array_agg(code ORDER BY code) AS codes, count(DISTINCT pick_order)::int AS picks FROM tickets WHERE campaign_id = $1`, [id]);
  expect(rows[0]).toEqual({ codes: ['A', 'B', 'C', 'D', 'E'], picks: 5 });
});

test('loadTickets: a code with backslashes, quotes, commas and non-ASCII letters is stored exactly as given', async () => {
  const id = await campaign();
  const odd = ['a\\b', '\\N', 'x\\ty', '"quoted",comma', 'Ünïcødé-🎟', "it's", 'N'];
  expect(await loadTicketsByCopy(pool, id, odd)).toBe(odd.length);
  const { rows } = await pool.query<{ code: string }>(`SELECT code FROM tickets WHERE campaign_id = $1`, [id]);
  expect(rows.map((r) => r.code).sort()).toEqual([...odd].sort());
});

test('loadTickets: concurrent loads of overlapping codes into one campaign load each code once, and their counts add up', async () => {
  const id = await campaign();
  const codes = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `C-${from + i}`);
  const loads = await Promise.all([loadTicketsByCopy(pool, id, codes(0, 6_000)), loadTicketsByCopy(pool, id, codes(4_000, 10_000))]);
  expect(loads[0] + loads[1]).toBe(10_000);
  expect(await counts(id)).toEqual({ rows: 10_000, counted: 10_000 });
  const { rows } = await pool.query(`SELECT count(DISTINCT code)::int AS codes FROM tickets WHERE campaign_id = $1`, [id]);
  expect(rows[0].codes).toBe(10_000);
});
