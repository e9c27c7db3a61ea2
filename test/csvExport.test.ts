// The allocations CSV (src/cli/csv.ts) as a spreadsheet sees it: whichever of , ; tab it splits on, and
// whether or not it honours the quotes, no cell begins a formula; and an RFC 4180 parser gives back
// the marked values, from which the documented rule recovers the exact ones. Checked on the rows
// `tessera export` writes from a real server, and on csvRow itself, the function the console's
// Export button calls.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { csvRow, HEADER, type ExportedAllocation } from '../src/cli/csv';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from './helpers/testServer';
import { cellsOf } from './helpers/csvCells';

const BIN = path.resolve(__dirname, '../bin/tessera.js');

/** A piece that a spreadsheet, once it drops spaces and quotes, would run as a formula. */
const FORMULA_AT_START = /^[\s"]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/;

/** Every piece of the text split on the separator, and on it and line ends, quotes or no quotes. */
function piecesSplitOn(text: string, separator: string): string[] {
  return [...text.split(separator), ...text.split(new RegExp(`${separator}|\\r\\n|\\r|\\n`))];
}

function expectNoFormulaWhereverSplit(text: string): void {
  for (const separator of [';', ',', '\t']) {
    const formulas = piecesSplitOn(text, separator).filter((piece) => FORMULA_AT_START.test(piece));
    expect({ separator, formulas }).toEqual({ separator, formulas: [] });
  }
}

/** RFC 4180: rows of cells, each with its text as written (`raw`) and its value; rows end at \n. */
function parseCsv(text: string): { raw: string; value: string }[][] {
  const rows: { raw: string; value: string }[][] = [];
  let row: { raw: string; value: string }[] = [];
  let i = 0;
  while (i < text.length) {
    const start = i;
    let value = '';
    if (text[i] === '"') {
      for (i += 1; ; ) {
        const quote = text.indexOf('"', i);
        if (quote === -1) throw new Error(`unterminated quote at ${start}`);
        value += text.slice(i, quote);
        i = quote + 1;
        if (text[i] !== '"') break;
        value += '"';
        i += 1;
      }
    } else {
      while (i < text.length && text[i] !== ',' && text[i] !== '\n') i += 1;
      value = text.slice(start, i);
    }
    row.push({ raw: text.slice(start, i), value });
    if (text[i] === ',') i += 1;
    else if (text[i] === '\n' || i === text.length) {
      rows.push(row);
      row = [];
      i += 1;
    } else throw new Error(`a quoted cell at ${start} is followed by ${JSON.stringify(text[i])}`);
  }
  return rows;
}

/** The documented way back: drop the ' at the start and the ' right after each , ; tab, CR or LF. */
const recover = (cell: string) => cell.replace(/^'/, '').replace(/([,;\t\r\n])'/g, '$1');

const HOLDER = "Bob;=cmd|' /C calc'!A0;";

/** An allocation as the API (EXPORT_QUERY) gives it. */
function allocation(i: number, overrides: Partial<ExportedAllocation> = {}): ExportedAllocation {
  return {
    sequence: i + 1,
    id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    status: 'ACTIVE',
    holder: `holder-${i}`,
    idempotencyKey: null,
    allocatedAt: '2030-01-02T03:04:05.678Z',
    expiresAt: null,
    releasedAt: null,
    metadata: null,
    ticket: { code: `CODE-${i}` },
    partner: { id: '11111111-2222-4333-8444-555555555555', name: 'Acme' },
    ...overrides,
  };
}

describe("the console's CSV rows (csvRow)", () => {
  test('the console exports with the same csvRow and header as the CLI', () => {
    const dir = path.resolve(__dirname, '../console/src');
    const sources = readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .map((file) => readFileSync(path.join(dir, file), 'utf8'));
    const importing = sources.filter((source) => /import \{[^}]*\bcsvRow\b[^}]*\bHEADER\b|import \{[^}]*\bHEADER\b[^}]*\bcsvRow\b/.test(source));
    expect(importing.length).toBeGreaterThan(0);
    for (const source of importing) expect(source).toMatch(/from '(\.\.\/)+src\/cli\/csv';/);
  });

  test('the holder Bob;=cmd… is quoted and marked after its ;, so no spreadsheet splits a formula out of it', () => {
    const row = csvRow(allocation(0, { holder: HOLDER }));
    expect(row.split(',')[3]).toBe(`"Bob;'=cmd|' /C calc'!A0;"`);
    expectNoFormulaWhereverSplit(row);
    expect(parseCsv(row)[0]![3]!.value).toBe("Bob;'=cmd|' /C calc'!A0;");
  });

  test('every text cell is quoted, the sequence is bare, and an absent value is an empty cell', () => {
    const [cells] = parseCsv(csvRow(allocation(6)));
    expect(cells!.map((c) => c.raw)).toEqual([
      '7',
      '"00000000-0000-4000-8000-000000000006"',
      '"CODE-6"',
      '"holder-6"',
      '"11111111-2222-4333-8444-555555555555"',
      '"Acme"',
      '"ACTIVE"',
      '"2030-01-02T03:04:05.678Z"',
      '',
      '',
      '',
      '',
    ]);
  });

  test.each([
    ['T;=1+2', "T;'=1+2"],
    ['T,+3', "T,'+3"],
    ['T\t@4', "T\t'@4"],
    ['T"5;"=6', `T"5;'"=6`],
    ['T\n=7', "T\n'=7"],
    ['T\r\n-8', "T\r'\n'-8"],
    ["T;'10", "T;''10"],
    ["'11", "''11"],
    ['=12', "'=12"],
    ['\t13', "'\t13"],
    ['a - b; c', 'a - b; c'],
  ])('%j is written so that a CSV parser reads %j', (value, marked) => {
    const rows = parseCsv(csvRow(allocation(1, { ticket: { code: value }, holder: value, idempotencyKey: value, partner: { id: 'p', name: value } })));
    expect(rows).toHaveLength(1);
    for (const column of [2, 3, 5, 10]) {
      expect(rows[0]![column]!.value).toBe(marked);
      expect(recover(rows[0]![column]!.value)).toBe(value);
    }
  });

  test('metadata is JSON text, marked like any other text; a negative number is marked and quoted', () => {
    const [cells] = parseCsv(csvRow(allocation(2, { sequence: -3, metadata: { list: [1, -2], note: 'x;=y' } })));
    expect(cells![0]!.raw).toBe(`"'-3"`);
    expect(cells![11]!.value).toBe(`{"list":[1,'-2],"note":"x;'=y"}`);
    expect(JSON.parse(recover(cells![11]!.value))).toEqual({ list: [1, -2], note: 'x;=y' });
  });

  test('thousands of strings of separators, quotes, spaces and formula characters: none splits into a formula, and each comes back exactly', () => {
    // A fixed-seed generator (mulberry32), so a failure names a string that fails again.
    let seed = 20_240_601;
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const alphabet = [';', ',', '\t', '\r', '\n', '"', "'", ' ', '\u3000', '=', '+', '-', '@', '\uFF1D', '\uFF20', '\0', 'a', '1'];
    const values = Array.from({ length: 3000 }, () => Array.from({ length: 1 + Math.floor(random() * 8) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(''));
    const text = HEADER + values.map((v, i) => csvRow(allocation(i, { ticket: { code: v }, holder: v, idempotencyKey: v, metadata: v }))).join('');
    expectNoFormulaWhereverSplit(text);
    const [, ...rows] = parseCsv(text);
    expect(rows.map((row) => row.map((cell) => recover(cell.value)))).toEqual(values.map((v, i) => cellsOf(allocation(i, { ticket: { code: v }, holder: v, idempotencyKey: v, metadata: v }))));
  });
});

describe('tessera export', () => {
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    server = await startTestServer();
    dir = mkdtempSync(path.join(tmpdir(), 'tessera-csv-export-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server.stop();
  });

  test('writes codes, holders, keys and partner names with ;= ,+ tab@ " and line ends so that no spreadsheet splits out a formula, and they come back exactly', async () => {
    const partner = await server.createPartner('Acme;=1+1,@x');
    // What the API accepts: codes, holders and keys with , ; " and formula characters.
    const campaignId = await server.createCampaign();
    const codes = ['C;=1+2', 'C,+3', 'C"4;"=5', "C;'6", 'C7', 'C8', 'C9'];
    const loaded = await server.gql(ADMIN_KEY, 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded } }', { id: campaignId, codes });
    expect(loaded.body.data!.loadTickets.loaded).toBe(codes.length);
    await server.openCampaign(campaignId);
    const claims = [
      { holder: HOLDER, idempotencyKey: 'k;=cmd' },
      { holder: 'h,+1', idempotencyKey: 'k,+1' },
      { holder: 'h"2;"=2', idempotencyKey: 'k"2;"@2' },
      { holder: "h;'3", idempotencyKey: "k,'3" },
      { holder: 'later-tab', idempotencyKey: 'later-tab' },
      { holder: 'later-lf', idempotencyKey: 'later-lf' },
      { holder: 'later-crlf', idempotencyKey: 'later-crlf' },
    ];
    for (const input of claims) {
      const res = await server.gql(partner.apiKey, CLAIM, { input: { campaignId, ...input } });
      expect(res.body.data!.claimTicket.error).toBeNull();
    }
    // Control characters cannot come in through the API any more; rows from before that rule can hold them.
    for (const [was, now] of [
      ['later-tab', '\t@4'],
      ['later-lf', '\n=5'],
      ['later-crlf', '\r\n-6'],
    ]) {
      const { rows } = await server.sql.query(
        'UPDATE allocations SET holder = $3, idempotency_key = $4 WHERE campaign_id = $1 AND holder = $2 RETURNING ticket_id',
        [campaignId, was, `h${now}`, `k${now}`],
      );
      await server.sql.query('UPDATE tickets SET code = $2 WHERE id = $1', [rows[0].ticket_id, `C${now}`]);
    }

    const out = path.join(dir, 'allocations.csv');
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, 'export', '--campaign', campaignId, '--out', out, '--url', server.url.replace(/\/graphql$/, ''), '--key', ADMIN_KEY], {
        cwd: dir,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', (code) => resolve({ code, stderr }));
    });
    expect(run).toEqual({ code: 0, stderr: expect.stringMatching(/7 allocations exported/) });
    const text = readFileSync(out, 'utf8');

    expectNoFormulaWhereverSplit(text);
    const [header, ...rows] = parseCsv(text);
    expect(header!.map((c) => c.raw).join(',') + '\n').toBe(HEADER);
    const byHolder = new Map(rows.map((row) => [recover(row[3]!.value), row]));
    expect(byHolder.get(HOLDER)![3]!.raw).toBe(`"Bob;'=cmd|' /C calc'!A0;"`);
    expect(byHolder.get(HOLDER)![10]!.value).toBe("k;'=cmd");
    expect(byHolder.get('h"2;"=2')![3]!.value).toBe(`h"2;'"=2`);
    expect(byHolder.get('h\t@4')![2]!.value).toBe("C\t'@4");
    expect(byHolder.get('h\r\n-6')![10]!.value).toBe("k\r'\n'-6");
    expect(rows.every((row) => row[5]!.value === "Acme;'=1+1,'@x")).toBe(true);
    expect(rows.every((row) => /^\d+$/.test(row[0]!.raw) && row.slice(1, 8).every((cell) => cell.raw.startsWith('"')))).toBe(true);

    // The documented way back gives exactly what the API holds.
    const api = await server.gql(
      ADMIN_KEY,
      `query($id: ID!) { campaign(id: $id) { allocations(first: 100) { edges { node {
        id sequence status holder idempotencyKey allocatedAt expiresAt releasedAt metadata ticket { code } partner { id name } } } } } }`,
      { id: campaignId },
    );
    const expected = api.body.data!.campaign.allocations.edges.map(({ node }: { node: Record<string, unknown> }) => cellsOf(node));
    expect(rows.map((row) => row.map((cell) => recover(cell.value)))).toEqual(expected);
    expect(expected.map((row: string[]) => row[3])).toEqual(expect.arrayContaining(['h\t@4', 'h\n=5', 'h\r\n-6', HOLDER]));
  });
});
