#!/usr/bin/env node
// Tessera's command line for operators (npx tessera …). It speaks the public GraphQL API only.
//
//   tessera load   --campaign <id> --file <codes.csv|->   load codes in batches, with a progress bar
//   tessera export --campaign <id> [--out <file.csv>]     the campaign's allocations as CSV
//   tessera verify-ballot --campaign <id> | --file <f>    recompute a drawn ballot (bin/verify-ballot.js, which
//                                                         also runs alone: node bin/verify-ballot.js <f>)
//
// Promises kept here (test/cli.test.ts checks each): every failure ends the process with one line
// "tessera: …" on stderr and a non-zero status (1 failed, 2 wrong usage, 130/143 interrupted); no
// timer, socket or stream outlives a failure; every HTTP request has a deadline (--timeout); an
// export writes nothing until its first page has arrived, and a file only appears, whole, at the
// end; the load bar counts codes the server has acknowledged; exported cells cannot run as
// spreadsheet formulas (see csvCell).
//
// HTTP goes through node:http/https rather than fetch: fetch refuses the ports of the Fetch
// standard's "bad ports" list (e.g. 6000, 5060) and reports every network failure as "fetch failed".
'use strict';
const { accessSync, constants: fsConstants, createReadStream, existsSync, readFileSync, statSync, unlinkSync } = require('node:fs');
const { open, rename, unlink, writeFile } = require('node:fs/promises');
const http = require('node:http');
const https = require('node:https');
const path = require('node:path');
const timers = require('node:timers');
const { URL } = require('node:url');
const { parseArgs } = require('node:util');
const cliProgress = require('cli-progress');
const { readBallotFile, verifyBallot } = require('./verify-ballot');

const DEFAULT_URL = 'http://localhost:4000';
const KEY_FILE = path.join('.tessera', 'admin-api-key');
const DEFAULT_TIMEOUT_SECONDS = 60;
const MAX_BATCH = 10_000; // loadTickets accepts at most 10,000 codes per call
const MAX_CONCURRENCY = 16;
// load sends the codes sorted, this many at a time: rows that arrive in the code index's order are
// appended to it rather than scattered over it (a million codes load ~25% faster sorted), and a
// window bounds the memory a file of any size takes (~100 MB for a million codes). The tests set a
// small one through TESSERA_LOAD_SORT_WINDOW.
const SORT_WINDOW = Number.parseInt(process.env.TESSERA_LOAD_SORT_WINDOW ?? '', 10) || 1_000_000;
const RETRY_ATTEMPTS = 6; // for 429 / 503 answers, waiting Retry-After between attempts
const MAX_RETRY_AFTER_SECONDS = 30; // a longer wait is reported instead of slept through
const PROGRESS_MS = 2000; // when stderr is not a terminal: a progress line at least this often while the count moves
const PROGRESS_STEPS = 10; // …and one at each tenth of the total

const EXIT = { OK: 0, FAILED: 1, USAGE: 2 };

const COMMON_OPTIONS = `Options for every command:
  --url <url>        the Tessera server (default: $TESSERA_URL, else ${DEFAULT_URL});
                     /graphql is added unless the URL already ends with it
  --key <key>        the admin API key (default: $TESSERA_API_KEY, else the file
                     ${KEY_FILE} in the current directory, which \`npm start\` writes
                     in development when ADMIN_API_KEY is not set)
  --timeout <s>      seconds to wait for each HTTP request (default ${DEFAULT_TIMEOUT_SECONDS})
  -h, --help         this help`;

const HELP = {
  main: `Usage: tessera <command> [options]

Commands:
  load      load ticket codes from a CSV file into a campaign
  export    write a campaign's allocations as CSV
  verify    recompute every counter and invariant of campaigns from their rows; --repair fixes counters
  verify-ballot
            recompute a drawn ballot from its published data: "verified", or the first mismatch
  help      this help, or a command's: tessera help load

${COMMON_OPTIONS}

"tessera <command> --help" shows a command's options.
Exit status: 0 done, 1 failed, 2 wrong usage, 130 interrupted.`,

  load: `Usage: tessera load --campaign <id> --file <codes.csv|-> [options]

Loads ticket codes into a campaign with loadTickets, a batch at a time. The first column of each
line is a code (RFC 4180 quotes allowed); a first line "code" is a header and skipped; empty lines
are skipped. Codes are sent sorted, in requests of --batch codes each: the file is read in parts
of up to ${SORT_WINDOW.toLocaleString('en-US')} codes, each sorted (the database adds sorted codes fastest).
The progress bar (on stderr) counts codes the server has acknowledged; when stderr is not a
terminal it is one line at each 10% and at least every ${PROGRESS_MS / 1000} s while codes are acknowledged.
Loading is idempotent: codes already in the campaign count as duplicates, so after a failure the
same command can simply be run again.

Options:
  --campaign <id>    the campaign (required; DRAFT or OPEN)
  --file <path|->    the CSV of codes, or - for standard input (required)
  --batch <n>        codes per loadTickets request, 1 to ${MAX_BATCH.toLocaleString('en-US')} (the most one call
                     takes; default ${MAX_BATCH.toLocaleString('en-US')})
  --concurrency <n>  requests in flight, 1 to ${MAX_CONCURRENCY} (default 2)

${COMMON_OPTIONS}`,

  export: `Usage: tessera export --campaign <id> [--out <file.csv>] [options]

Writes the campaign's allocations, oldest first, as CSV: to --out, or to standard output. A file
appears only when the export is complete (it is written under a temporary name, then renamed);
standard output gets nothing before the first page has been read.
Columns: sequence, allocation_id, ticket_code, holder, partner_id, partner_name, status,
allocated_at, expires_at, released_at, idempotency_key, metadata (JSON).
Every text value is quoted (RFC 4180); the sequence, a number, is bare.
Spreadsheet-safe whichever of , ; tab a spreadsheet splits on: wherever a cell could begin - at the
start of a value, and right after each , ; tab, carriage return or line feed in it - a ' is
inserted where what follows begins with = + - @ (after any whitespace or double quotes; also their
full-width forms), with ' or with NUL, and at the start also where a tab, carriage return or line
feed begins the value. To get the exact value back, parse the CSV, then remove one leading ' from
the value and the ' right after each , ; tab, carriage return or line feed in it, wherever there is
one: each is an added one.

Options:
  --campaign <id>    the campaign (required)
  --out <file|->     the CSV file to write (default: standard output)

${COMMON_OPTIONS}`,

  verify: `Usage: tessera verify [--campaign <id>] [--repair] [options]

Asks the server to recompute, from the rows, every counter, stats figure, quota, allotment and
live-allocation invariant of a campaign (verifyCampaign), or of every campaign when --campaign is
left out, and prints each drift with its size. With --repair, the counters that drifted are fixed
(repairCampaign: one transaction under the campaign's gate, audited); drifts of rows (a ticket's
status, an allotment) are reported and never touched — they need a person.
Exit status 0 when nothing drifts (after the repair, with --repair), 1 otherwise.

Options:
  --campaign <id>    the campaign (default: every campaign)
  --repair           fix the counters that drifted

${COMMON_OPTIONS}`,

  'verify-ballot': `Usage: tessera verify-ballot --campaign <id> [--save <file.json>] [options]
       tessera verify-ballot --file <ballot.json> [--campaign <id>] [options]

Recomputes a drawn BALLOT campaign from what it published, as anyone can: the seed against the
commitment published at the opening, entriesDigest against the entries, every entry's rank
(sha256("<seed>:<entry id>") ascending) and every draw result (the walk: an entry wins when the
tickets not yet won cover its quantity, within Ballot.partnerLimits). Prints "verified: ..." and
exits 0, or names the first mismatch and exits 1.

--campaign reads the ballot and every entry from the API (an admin key reads every entry; a
partner key reads only its own, so a partner verifies with the operator's published file).
--save writes what was read, verified, to a file that can be published. --file verifies such a file
without the API; with --campaign as well, the file's seed, commitment and digest must also be the
ones the API shows for that campaign (a partner key is enough).

Options:
  --campaign <id>    the campaign
  --file <path>      a ballot file written by --save
  --save <path>      write the ballot and its entries as JSON after verifying them

${COMMON_OPTIONS}`,
};

const COMMANDS = {
  verify: { campaign: { type: 'string' }, repair: { type: 'boolean' } },
  'verify-ballot': { campaign: { type: 'string' }, file: { type: 'string' }, save: { type: 'string' } },
  load: { campaign: { type: 'string' }, file: { type: 'string' }, batch: { type: 'string' }, concurrency: { type: 'string' } },
  export: { campaign: { type: 'string' }, out: { type: 'string' } },
};
const SHARED = { url: { type: 'string' }, key: { type: 'string' }, timeout: { type: 'string' }, help: { type: 'boolean', short: 'h' } };

/** An expected failure: its message is the whole story, printed as "tessera: <message>". */
class CliError extends Error {
  constructor(message, exitCode = EXIT.FAILED) {
    super(message);
    this.exitCode = exitCode;
  }
}
const usage = (message, command) => new CliError(`${message} (see: tessera ${command ? `${command} ` : ''}--help)`, EXIT.USAGE);

// Work to undo if the process is interrupted (SIGINT/SIGTERM): stop the bar, remove a temporary
// file, and say how far a load got. Each entry is synchronous: the process exits right after.
const onInterrupt = new Set();

async function main(argv) {
  const [command, ...rest] = argv;
  if (command === undefined) {
    process.stderr.write(`${HELP.main}\n`);
    return EXIT.USAGE;
  }
  if (command === '-h' || command === '--help') return help('main');
  if (command === 'help') {
    if (rest.length > 1) throw usage(`unexpected argument: ${rest[1]}`);
    if (rest.length === 1 && !COMMANDS[rest[0]]) throw usage(`unknown command: ${rest[0]}`);
    return help(rest[0] ?? 'main');
  }
  if (!COMMANDS[command]) {
    if (command.startsWith('-')) throw new CliError(`unknown option: ${command} (the command comes first: tessera load|export|verify|verify-ballot [options]; see tessera --help)`, EXIT.USAGE);
    throw usage(`unknown command: ${command}`);
  }
  const helpAsked = rest.indexOf('--') === -1 ? rest : rest.slice(0, rest.indexOf('--'));
  if (helpAsked.includes('--help') || helpAsked.includes('-h')) return help(command);

  const values = parseOptions(command, rest);
  const timeoutMs = positiveNumber(values, 'timeout', DEFAULT_TIMEOUT_SECONDS, command) * 1000;
  if (command === 'verify-ballot') return verifyBallotCommand(values, timeoutMs);
  if (command === 'verify') return verifyCommand(values, timeoutMs);
  if (!values.campaign) throw usage('--campaign <id> is required', command);
  if (command === 'load') {
    if (!values.file) throw usage('--file <codes.csv> (or - for standard input) is required', command);
    const batch = integer(values, 'batch', MAX_BATCH, 1, MAX_BATCH, command);
    const concurrency = integer(values, 'concurrency', 2, 1, MAX_CONCURRENCY, command);
    if (values.file !== '-') readableFile(values.file);
    const api = client(endpointOf(values.url, command), apiKey(values.key), timeoutMs);
    try {
      await load(api, values.campaign, values.file, batch, concurrency);
    } finally {
      api.close();
    }
  } else {
    const out = values.out === undefined || values.out === '-' ? null : values.out;
    if (out) writableTarget(out);
    const api = client(endpointOf(values.url, command), apiKey(values.key), timeoutMs);
    try {
      await exportAllocations(api, values.campaign, out);
    } finally {
      api.close();
    }
  }
  return EXIT.OK;
}

function help(topic) {
  process.stdout.write(`${HELP[topic]}\n`);
  return EXIT.OK;
}

function parseOptions(command, args) {
  try {
    return parseArgs({ args, options: { ...COMMANDS[command], ...SHARED }, strict: true, allowPositionals: false }).values;
  } catch (error) {
    const quoted = /'([^']+)'/.exec(error.message)?.[1];
    switch (error.code) {
      case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
        throw usage(`unknown option: ${quoted ?? error.message}`, command);
      case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
        throw usage(`unexpected argument: ${quoted ?? error.message}`, command);
      case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
        // "--key <value>" given no value, or followed by another option: say which option.
        const option = /^(-\S+)/.exec(quoted ?? '')?.[1];
        throw usage(option ? `${option} needs a value` : error.message, command);
      }
      default:
        throw usage(error.message, command);
    }
  }
}

function integer(values, name, fallback, min, max, command) {
  if (values[name] === undefined) return fallback;
  const n = Number(values[name]);
  if (!/^\d+$/.test(values[name].trim()) || n < min || n > max) throw usage(`--${name} must be a whole number from ${min} to ${max} (got "${values[name]}")`, command);
  return n;
}

function positiveNumber(values, name, fallback, command) {
  if (values[name] === undefined) return fallback;
  const n = Number(values[name]);
  if (values[name].trim() === '' || !Number.isFinite(n) || n <= 0 || n > 86_400) {
    throw usage(`--${name} must be a number of seconds, above 0 and at most 86400 (got "${values[name]}")`, command);
  }
  return n;
}

function endpointOf(option, command) {
  const raw = option ?? (process.env.TESSERA_URL || DEFAULT_URL);
  const from = option !== undefined ? '--url' : process.env.TESSERA_URL ? 'TESSERA_URL' : 'the default URL';
  let url;
  try {
    url = new URL(raw);
  } catch {
    throw usage(`${from} is not a URL: "${raw}" (expected e.g. ${DEFAULT_URL})`, command);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw usage(`${from} must start with http:// or https:// (got "${raw}")`, command);
  if (!/\/graphql\/?$/.test(url.pathname)) url.pathname = `${url.pathname.replace(/\/+$/, '')}/graphql`;
  url.pathname = url.pathname.replace(/\/+$/, '');
  return url;
}

/** --key, else $TESSERA_API_KEY, else ./.tessera/admin-api-key (written by `npm start` in development). */
function apiKey(option) {
  if (option !== undefined) {
    if (option.trim() === '') throw new CliError('--key is empty (did a shell variable expand to nothing?)', EXIT.USAGE);
    return { key: option.trim(), source: '--key' };
  }
  const env = process.env.TESSERA_API_KEY?.trim();
  if (env) return { key: env, source: 'TESSERA_API_KEY' };
  const file = path.resolve(KEY_FILE);
  if (existsSync(file)) {
    let saved;
    try {
      saved = readFileSync(file, 'utf8').trim();
    } catch (error) {
      throw new CliError(`cannot read the API key file ${file}: ${error.code ?? error.message}`, EXIT.USAGE);
    }
    if (saved) return { key: saved, source: file };
  }
  // The server's own variable is not read (a shell may hold a different server's key); say so.
  const hint = process.env.ADMIN_API_KEY ? '; ADMIN_API_KEY is the server\'s setting and is not read here: pass --key "$ADMIN_API_KEY"' : '';
  throw new CliError(
    `no API key: pass --key <key>, set TESSERA_API_KEY, or run from the directory where \`npm start\` wrote ${KEY_FILE} (not found: ${file})${hint}`,
    EXIT.USAGE,
  );
}

function readableFile(file) {
  let stat;
  try {
    stat = statSync(file);
    accessSync(file, fsConstants.R_OK);
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${describeFsError(error)}`, EXIT.USAGE);
  }
  if (stat.isDirectory()) throw new CliError(`cannot read ${file}: it is a directory`, EXIT.USAGE);
}

function writableTarget(out) {
  if (existsSync(out) && statSync(out).isDirectory()) throw new CliError(`cannot write ${out}: it is a directory`, EXIT.USAGE);
  const dir = path.dirname(path.resolve(out));
  try {
    accessSync(dir, fsConstants.W_OK);
  } catch (error) {
    throw new CliError(`cannot write ${out}: ${describeFsError(error)} (${dir})`, EXIT.USAGE);
  }
}

const describeFsError = (error) =>
  ({ ENOENT: 'no such file or directory', EACCES: 'permission denied', EPERM: 'permission denied', EISDIR: 'it is a directory', ENOSPC: 'no space left on device' })[error.code] ??
  error.message;

// ——— HTTP ———

const NETWORK_ERRORS = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed (temporary DNS failure)',
  ECONNRESET: 'connection reset by the server',
  EPIPE: 'connection closed by the server',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  ECONNABORTED: 'connection aborted',
  EPROTO: 'TLS handshake failed (is it http:// rather than https://?)',
  ERR_SSL_WRONG_VERSION_NUMBER: 'TLS handshake failed (is it http:// rather than https://?)',
  HPE_INVALID_CONSTANT: 'the answer is not HTTP (is it https:// rather than http://?)',
};

/**
 * A GraphQL client for one endpoint and key. Every request has a deadline (connect, send and the
 * whole answer); 429 and 503 answers are retried after their Retry-After; close() destroys the
 * connections it kept alive.
 */
function client(endpoint, { key, source }, timeoutMs) {
  const isHttps = endpoint.protocol === 'https:';
  const agent = new (isHttps ? https : http).Agent({ keepAlive: true });
  const shown = new URL(endpoint.href);
  shown.username = '';
  shown.password = '';
  const where = shown.href; // for messages: never a password from the URL

  function post(body) {
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (error, value) => {
        if (settled) return;
        settled = true;
        timers.clearTimeout(timer);
        if (error) reject(error);
        else resolve(value);
      };
      const req = (isHttps ? https : http).request(endpoint, {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': Buffer.byteLength(body),
          authorization: `Bearer ${key}`,
          'user-agent': 'tessera-cli',
        },
      });
      const timer = timers.setTimeout(() => {
        const error = new Error(`no answer within ${timeoutMs / 1000} s`);
        error.code = 'TESSERA_TIMEOUT';
        req.destroy(error);
        finish(error);
      }, timeoutMs);
      req.on('error', (error) => finish(Object.assign(error, { reusedSocket: req.reusedSocket })));
      req.on('response', (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('error', (error) => finish(error));
        res.on('end', () => finish(null, { status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('close', () => {
          if (!res.complete) finish(Object.assign(new Error('the answer was cut off'), { code: 'ECONNRESET' }));
        });
      });
      req.end(body);
    });
  }

  async function request(query, variables, { cancelled } = {}) {
    const body = JSON.stringify({ query, variables });
    for (let attempt = 1; ; attempt += 1) {
      let res;
      try {
        res = await post(body);
      } catch (error) {
        // A kept-alive connection the server had just closed: the request never arrived; again.
        if (error.reusedSocket && error.code === 'ECONNRESET' && attempt === 1) continue;
        if (error.code === 'TESSERA_TIMEOUT') throw new CliError(`no answer from ${where} within ${timeoutMs / 1000} s (--timeout)`);
        const reason = NETWORK_ERRORS[error.code] ?? error.message ?? String(error);
        throw new CliError(`could not reach ${where}: ${reason}`);
      }
      let payload = null;
      try {
        payload = JSON.parse(res.text);
      } catch {
        /* not JSON: reported below */
      }
      const first = payload?.errors?.[0];
      if ((res.status === 429 || res.status === 503) && attempt < RETRY_ATTEMPTS && !cancelled?.()) {
        const wait = Number(res.headers['retry-after'] ?? 1);
        if (Number.isFinite(wait) && wait >= 0 && wait <= MAX_RETRY_AFTER_SECONDS) {
          await new Promise((resolve) => timers.setTimeout(resolve, Math.max(wait, 0.1) * 1000));
          continue;
        }
      }
      if (!payload || typeof payload !== 'object' || !('data' in payload || 'errors' in payload)) {
        const type = String(res.headers['content-type'] ?? 'no content type').split(';')[0];
        const hint =
          res.status >= 300 && res.status < 400 && res.headers.location
            ? `: it redirects to ${res.headers.location}; use that URL`
            : res.status < 300 || res.status === 404 || res.status === 405
              ? ': is the URL a Tessera server?'
              : '';
        throw new CliError(`${where} answered HTTP ${res.status} (${type}) instead of GraphQL${hint}`);
      }
      if (first) throw graphqlError(first, res, source, where);
      if (!payload.data) throw new CliError(`${where} answered HTTP ${res.status} without data`);
      return payload.data;
    }
  }

  return { request, close: () => agent.destroy(), where, keySource: source };
}

function graphqlError(error, res, keySource, where) {
  const code = error.extensions?.code ?? `HTTP ${res.status}`;
  const message = String(error.message ?? '').trim();
  const from = keySource === '--key' || keySource === 'TESSERA_API_KEY' ? keySource : `the file ${keySource}`;
  if (code === 'UNAUTHENTICATED') return new CliError(`the API key from ${from} was refused by ${where} (UNAUTHENTICATED: ${message})`);
  if (code === 'FORBIDDEN') return new CliError(`the API key from ${from} is not allowed to do this; the admin key is needed (FORBIDDEN: ${message})`);
  if (code === 'RATE_LIMITED' || res.status === 429) {
    const after = res.headers['retry-after'];
    return new CliError(`${code}: ${message}${after ? ` (the server asks to retry after ${after} s)` : ''}`);
  }
  return new CliError(`${code}: ${message}`);
}

// ——— load ———

const CAMPAIGN = 'query($id: ID!) { campaign(id: $id) { id name status } }';
const LOAD = 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded duplicates } }';

/** The code in a CSV line: its first field, unquoted per RFC 4180; null for an empty line. */
function firstField(line) {
  const text = line.trimStart();
  if (text.startsWith('"')) {
    let value = '';
    for (let i = 1; ; ) {
      const quote = text.indexOf('"', i);
      if (quote === -1) return value + text.slice(i); // unterminated: the rest of the line
      value += text.slice(i, quote);
      if (text[quote + 1] !== '"') return value;
      value += '"';
      i = quote + 2;
    }
  }
  const comma = text.indexOf(',');
  return (comma === -1 ? text : text.slice(0, comma)).trim();
}

const HEADER_CELL = /^(code|codes|ticket|tickets|ticket_code)$/i;
const LF = 0x0a;
const CR = 0x0d;
const COMMA = 0x2c;

/**
 * The codes of a CSV stream in file order, a chunk at a time: { codes, lines } (each code's line
 * number); no header, no empty lines. Lines end at \n, \r\n or a lone \r. Each code is decoded
 * from the bytes on its own (buffer.toString of its range): a flat string, which V8 compares and
 * sorts several times faster than the slices of a larger string readline hands out.
 */
async function* readCodes(input) {
  let rest = Buffer.alloc(0);
  let n = 0;
  let seenFirst = false;
  const take = (buffer, start, end, comma, out) => {
    n += 1;
    const code = n === 1 ? firstField(buffer.toString('utf8', start, end).replace(/^\uFEFF/, '')) : fieldOf(buffer, start, end, comma);
    if (!code) return;
    if (!seenFirst) {
      seenFirst = true;
      if (HEADER_CELL.test(code)) return;
    }
    out.codes.push(code);
    out.lines.push(n);
  };
  const split = (buffer, final) => {
    const out = { codes: [], lines: [] };
    let start = 0;
    // The next \r and comma at or after start, kept rather than searched for on every line.
    let cr = buffer.indexOf(CR);
    let comma = buffer.indexOf(COMMA);
    for (;;) {
      if (cr !== -1 && cr < start) cr = buffer.indexOf(CR, start);
      if (comma !== -1 && comma < start) comma = buffer.indexOf(COMMA, start);
      let end = buffer.indexOf(LF, start);
      if (cr !== -1 && (end === -1 || cr < end - 1)) {
        if (end === -1 && cr === buffer.length - 1 && !final) break; // \r\n may straddle two chunks
        end = cr; // a lone \r (a \r right before \n is part of \r\n)
      }
      if (end === -1) break;
      take(buffer, start, end > start && buffer[end - 1] === CR && buffer[end] === LF ? end - 1 : end, comma, out);
      start = end + 1;
    }
    if (final && start < buffer.length) {
      if (comma !== -1 && comma < start) comma = buffer.indexOf(COMMA, start);
      take(buffer, start, buffer.length, comma, out);
      start = buffer.length;
    }
    return { out, rest: buffer.subarray(start) };
  };
  for await (const chunk of input) {
    const { out, rest: tail } = split(rest.length ? Buffer.concat([rest, chunk]) : chunk, false);
    rest = tail;
    if (out.codes.length) yield out;
  }
  const { out } = split(rest, true);
  if (out.codes.length) yield out;
}

/** firstField of the line at buffer[start, end) (`comma`: the next comma from start, or -1), decoding only the field when it is not quoted. */
function fieldOf(buffer, start, end, comma) {
  const field = buffer.toString('utf8', start, comma === -1 || comma > end ? end : comma).trim();
  return field.startsWith('"') ? firstField(buffer.toString('utf8', start, end)) : field;
}

function openInput(file) {
  return file === '-' ? process.stdin : createReadStream(file);
}

async function countCodes(file) {
  const input = openInput(file);
  let total = 0;
  try {
    for await (const { codes } of readCodes(input)) total += codes.length;
  } finally {
    input.destroy();
  }
  return total;
}

/**
 * Windows of up to `size` codes: { codes, lines } in file order, `batches(n)` — the same codes in
 * the order JavaScript's sort puts strings (UTF-16 code units: under PostgreSQL's C collation the
 * code index's own order; under another the order only costs speed), n at a time — and `last`,
 * true on the last window.
 */
async function* sortedWindows(chunks, size) {
  let codes = [];
  let lines = [];
  const window = (last) => {
    const codesOfWindow = codes;
    return { codes, lines, last, batches: (n) => sortedBatches(codesOfWindow, n) };
  };
  for await (const chunk of chunks) {
    for (let i = 0; i < chunk.codes.length; ) {
      const take = Math.min(size - codes.length, chunk.codes.length - i);
      codes.push(...chunk.codes.slice(i, i + take));
      lines.push(...chunk.lines.slice(i, i + take));
      i += take;
      if (codes.length < size) continue;
      yield window(false);
      codes = [];
      lines = [];
    }
  }
  yield window(true);
}

/**
 * `codes` sorted, `n` at a time. Sorting a million codes takes ~0.5 s, and the server would wait
 * for it; so the codes are first put in buckets by the two characters after the prefix they all
 * share (a bucket's codes all sort before the next bucket's), and each bucket is sorted only when
 * its codes are next to go: the first request leaves after one bucket's sort, and the rest are
 * sorted while requests are in flight.
 */
function* sortedBatches(codes, n) {
  if (codes.length === 0) return;
  let min = codes[0];
  let max = codes[0];
  for (const code of codes) {
    if (code < min) min = code;
    else if (code > max) max = code;
  }
  let shared = 0;
  while (shared < min.length && min.charCodeAt(shared) === max.charCodeAt(shared)) shared += 1;
  // Past its end a code's character counts as 0, below every real one (0xFFFF + 1 at most).
  const charAt = (code, i) => (i < code.length ? code.charCodeAt(i) + 1 : 0);
  const buckets = new Map();
  for (const code of codes) {
    const key = charAt(code, shared) * 0x10001 + charAt(code, shared + 1);
    const bucket = buckets.get(key);
    if (bucket) bucket.push(code);
    else buckets.set(key, [code]);
  }
  let pending = [];
  for (const key of [...buckets.keys()].sort((a, b) => a - b)) {
    pending = pending.concat(buckets.get(key).sort());
    buckets.delete(key);
    for (; pending.length >= n; pending = pending.slice(n)) yield pending.slice(0, n);
  }
  if (pending.length) yield pending;
}

/**
 * A progress bar on stderr: cli-progress's, redrawn in place, on a terminal. Otherwise (a pipe, a
 * file, a CI log) lines of the same text, each on its own: at the start, at each tenth of the total,
 * at least every PROGRESS_MS while the count moves (the only ones when the total is not known), and
 * at the end — cli-progress's own line mode draws on a timer only, which for a load of a few
 * seconds is one line at 0%, one somewhere and one at 100%.
 */
function progressBar(options, preset) {
  return process.stderr.isTTY ? new cliProgress.SingleBar(options, preset) : new ProgressLines(options.format, preset);
}

class ProgressLines {
  constructor(format, preset) {
    this.format = format;
    this.preset = preset;
    this.total = 0;
    this.value = 0;
    this.payload = {};
    this.shown = null; // the text of the last line written
    this.shownAt = 0;
    this.step = -1; // the last tenth a line was written at
  }

  start(total, value, payload = {}) {
    this.total = total;
    this.update(value, payload);
    this.write();
  }

  getTotal() {
    return this.total;
  }

  setTotal(total) {
    this.total = total;
  }

  update(value, payload = {}) {
    this.value = value;
    Object.assign(this.payload, payload);
    const step = this.total > 0 ? Math.floor((Math.min(value, this.total) * PROGRESS_STEPS) / this.total) : -1;
    if (step > this.step || (this.shown !== null && Date.now() - this.shownAt >= PROGRESS_MS)) this.write();
  }

  stop() {
    this.write();
  }

  write() {
    const text = this.text();
    if (text === this.shown) return;
    this.shown = text;
    this.shownAt = Date.now();
    if (this.total > 0) this.step = Math.floor((Math.min(this.value, this.total) * PROGRESS_STEPS) / this.total);
    process.stderr.write(`${text}\n`);
  }

  text() {
    const share = this.total > 0 ? Math.min(this.value / this.total, 1) : 0;
    const width = 40;
    const done = Math.round(share * width);
    const values = { ...this.payload, bar: this.preset.barCompleteChar.repeat(done) + this.preset.barIncompleteChar.repeat(width - done), percentage: Math.floor(share * 100), value: this.value, total: this.total };
    return this.format.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
  }
}

async function load(api, campaignId, file, batchSize, concurrency) {
  const { campaign } = await api.request(CAMPAIGN, { id: campaignId });
  if (!campaign) throw new CliError(`no campaign ${campaignId} at ${api.where} (check --campaign)`);
  if (campaign.status === 'CLOSED') throw new CliError(`CAMPAIGN_CLOSED: campaign ${campaignId} ("${campaign.name}") is CLOSED; tickets cannot be added to it`);

  const started = Date.now();
  const input = openInput(file);
  const windows = sortedWindows(readCodes(input), SORT_WINDOW);
  let first;
  try {
    first = await windows.next();
  } catch (error) {
    input.destroy();
    throw new CliError(`cannot read ${file === '-' ? 'standard input' : file}: ${describeFsError(error)}`);
  }
  // The bar's 100%: the first window's size when it is the whole file; a longer file is counted
  // first (read twice); standard input is not known until its end.
  const whole = first.value.last;
  const total = whole ? first.value.codes.length : file === '-' ? null : await countCodes(file);
  if (total === 0 && file !== '-') {
    input.destroy();
    throw new CliError(`${file} holds no codes`);
  }

  const totals = { read: 0, loaded: 0, duplicates: 0 };
  const acknowledged = () => totals.loaded + totals.duplicates;
  const rate = () => Math.round(acknowledged() / Math.max((Date.now() - started) / 1000, 0.001));
  const bar = progressBar(
    {
      format:
        total === null
          ? 'loading | {value} codes loaded of {read} read | {duplicates} duplicates | {rate} codes/s'
          : 'loading |{bar}| {percentage}% | {value} of {total} codes loaded | {duplicates} duplicates | {rate} codes/s',
      hideCursor: true,
      stream: process.stderr,
      noTTYOutput: true,
      notTTYSchedule: PROGRESS_MS,
      gracefulExit: false, // our own SIGINT handler stops the bar (cli-progress's would keep the process running)
    },
    cliProgress.Presets.shades_classic,
  );
  const progressNote = () =>
    acknowledged() > 0
      ? `; ${acknowledged()} of ${total ?? totals.read} codes had been acknowledged (${totals.loaded} loaded, ${totals.duplicates} duplicates): run the same command again to load the rest (codes already loaded count as duplicates)`
      : '; no code had been loaded';
  const stopBar = () => bar.stop();
  const interrupted = () => {
    stopBar();
    input.destroy();
    return progressNote();
  };
  onInterrupt.add(interrupted);

  bar.start(total ?? 0, 0, { read: 0, duplicates: 0, rate: 0 });
  let failure = null;
  const inFlight = new Set();
  const send = (codes, window) => {
    const p = api
      .request(LOAD, { id: campaignId, codes }, { cancelled: () => failure !== null })
      .then((data) => {
        totals.loaded += data.loadTickets.loaded;
        totals.duplicates += data.loadTickets.duplicates;
        if (total !== null && acknowledged() > bar.getTotal()) bar.setTotal(acknowledged());
        bar.update(acknowledged(), { read: totals.read, duplicates: totals.duplicates, rate: rate() });
      })
      .catch((error) => {
        failure ??= withLine(error, codes, window, file);
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };

  try {
    for (let next = first; !next.done && !failure; next = await windows.next()) {
      const window = next.value;
      totals.read += window.codes.length;
      if (total === null) bar.update(acknowledged(), { read: totals.read });
      for (const batch of window.batches(batchSize)) {
        while (inFlight.size >= concurrency && !failure) await Promise.race(inFlight);
        if (failure) break;
        send(batch, window);
      }
    }
    // Wait for every request sent: what it did is then known, and counted.
    while (inFlight.size) await Promise.race(inFlight);
    if (failure) throw new CliError(`${failure.message}${progressNote()}`, failure.exitCode);
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`cannot read ${file === '-' ? 'standard input' : file}: ${describeFsError(error)}${progressNote()}`);
  } finally {
    input.destroy();
    stopBar();
    onInterrupt.delete(interrupted);
  }
  const seconds = (Date.now() - started) / 1000;
  process.stderr.write(
    `${totals.read} codes read, ${totals.loaded} loaded, ${totals.duplicates} duplicates skipped in ${seconds.toFixed(1)} s (${Math.round(totals.read / Math.max(seconds, 0.001))} codes/s)\n`,
  );
}

/** "codes[17] must be …" names a code in the batch: say which line of the file it came from (its first). */
function withLine(error, codes, window, file) {
  const index = /codes\[(\d+)\]/.exec(error.message)?.[1];
  const code = index === undefined ? undefined : codes[index];
  if (code === undefined || !(error instanceof CliError)) return error;
  const line = window.lines[window.codes.indexOf(code)];
  const where = file === '-' ? `line ${line} of standard input` : `${file} line ${line}`;
  return new CliError(`${error.message} — ${where}: ${JSON.stringify(code)}`, error.exitCode);
}

// ——— export ———

require('tsx/cjs');
const { EXPORT_QUERY: EXPORT, HEADER, csvRow } = require('../src/cli/csv.ts');

/** Standard output, written only once there is something to write; EPIPE and the like become errors. */
function stdoutSink() {
  let broken = null;
  const onError = (error) => (broken ??= error);
  process.stdout.on('error', onError);
  return {
    async write(text) {
      if (broken) throw broken;
      if (process.stdout.write(text)) return;
      await new Promise((resolve) => {
        const done = () => {
          process.stdout.off('drain', done);
          process.stdout.off('error', done);
          process.stdout.off('close', done);
          resolve();
        };
        process.stdout.on('drain', done);
        process.stdout.on('error', done);
        process.stdout.on('close', done);
      });
      if (broken) throw broken;
    },
    async finish() {
      process.stdout.off('error', onError);
    },
    abort() {
      process.stdout.off('error', onError);
    },
    describe: 'standard output',
  };
}

/** A file written under a temporary name beside it, renamed into place when complete. */
async function fileSink(out) {
  const target = path.resolve(out);
  const temporary = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.tmp`);
  const handle = await open(temporary, 'wx');
  let closed = false;
  return {
    async write(text) {
      await handle.write(text);
    },
    async finish() {
      await handle.sync();
      await handle.close();
      closed = true;
      await rename(temporary, target);
    },
    // Synchronous enough for an interrupt: the descriptor closes with the process.
    abort() {
      if (!closed) handle.close().catch(() => undefined);
      try {
        unlinkSync(temporary);
      } catch {
        /* already gone */
      }
    },
    async abortAsync() {
      if (!closed) await handle.close().catch(() => undefined);
      await unlink(temporary).catch(() => undefined);
    },
    describe: out,
  };
}

async function exportAllocations(api, campaignId, out) {
  let sink = null;
  let bar = null;
  let written = 0;
  const interrupted = () => {
    bar?.stop();
    sink?.abort();
    return out ? `; ${out} was not written` : `; ${written} allocations had been written`;
  };
  onInterrupt.add(interrupted);
  try {
    let after = null;
    for (;;) {
      const data = await api.request(EXPORT, { id: campaignId, after });
      if (!data.campaign) throw new CliError(`no campaign ${campaignId} at ${api.where} (check --campaign)`);
      const page = data.campaign.allocations;
      if (!sink) {
        try {
          sink = out ? await fileSink(out) : stdoutSink();
        } catch (error) {
          throw new CliError(`cannot write ${out}: ${describeFsError(error)}`);
        }
        await writeTo(sink, HEADER, written);
        if (out) {
          bar = progressBar(
            { format: 'exporting |{bar}| {value}/{total} allocations', stream: process.stderr, noTTYOutput: true, notTTYSchedule: PROGRESS_MS, gracefulExit: false },
            cliProgress.Presets.shades_classic,
          );
          bar.start(page.totalCount, 0);
        }
      }
      await writeTo(sink, page.edges.map((edge) => csvRow(edge.node)).join(''), written);
      written += page.edges.length;
      if (bar && written > bar.getTotal()) bar.setTotal(written);
      bar?.update(written);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    bar?.stop();
    try {
      await sink.finish();
    } catch (error) {
      throw new CliError(`cannot write ${sink.describe}: ${describeFsError(error)}`);
    }
  } catch (error) {
    bar?.stop();
    if (sink?.abortAsync) await sink.abortAsync();
    else sink?.abort();
    if (!(error instanceof CliError)) throw error;
    const note = out ? `; ${out} was not written` : written > 0 && !error.told ? `; standard output got only the first ${written} allocations` : '';
    throw new CliError(`${error.message}${note}`, error.exitCode);
  } finally {
    onInterrupt.delete(interrupted);
  }
  process.stderr.write(`${written} allocations exported${out ? ` to ${out}` : ''}\n`);
}

async function writeTo(sink, text, written) {
  try {
    await sink.write(text);
  } catch (error) {
    if (sink.describe !== 'standard output') throw new CliError(`cannot write ${sink.describe}: ${describeFsError(error)}`);
    const message = error.code === 'EPIPE' ? `standard output was closed after ${written} allocations` : `cannot write standard output: ${describeFsError(error)}`;
    throw Object.assign(new CliError(message), { told: true });
  }
}

// ——— run ———

const BALLOT = `query($id: ID!) {
  campaign(id: $id) { id mode ballot { seedCommitment seed entriesDigest entryCount winners drawnAt tickets partnerLimits } }
}`;
const BALLOT_ENTRIES = `query($id: ID!, $after: String) {
  campaign(id: $id) {
    ballotEntries(first: 100, after: $after) {
      pageInfo { hasNextPage endCursor }
      edges { node { id quantity status rank wonInDraw partner { id } } }
    }
  }
}`;

const DRIFT_FIELDS = 'check subject expected found size repairable';
const VERIFICATION = `ok campaign { id name } drifts { ${DRIFT_FIELDS} } repaired { ${DRIFT_FIELDS} }`;

/** tessera verify: each campaign's drifts (verifyCampaign), repaired with --repair (repairCampaign). */
async function verifyCommand(values, timeoutMs) {
  const api = client(endpointOf(values.url, 'verify'), apiKey(values.key), timeoutMs);
  try {
    const ids = values.campaign ? [values.campaign] : await allCampaignIds(api);
    let drifting = 0;
    for (const id of ids) {
      const field = values.repair ? 'repairCampaign' : 'verifyCampaign';
      const operation = values.repair ? 'mutation' : 'query';
      const data = await api.request(`${operation}($id: ID!) { ${field}(id: $id) { ${VERIFICATION} } }`, { id });
      const result = data[field];
      const name = `${result.campaign.name} (${result.campaign.id})`;
      for (const d of result.repaired) process.stdout.write(`${name}: repaired ${describeDrift(d)}\n`);
      for (const d of result.drifts) process.stdout.write(`${name}: ${d.repairable ? 'DRIFT' : 'DRIFT (a row: not repaired)'} ${describeDrift(d)}\n`);
      if (result.ok) process.stdout.write(`${name}: ok${result.repaired.length ? ' after the repair' : ''}\n`);
      else drifting += 1;
    }
    process.stdout.write(`${ids.length} campaign${ids.length === 1 ? '' : 's'} verified, ${drifting} with drift\n`);
    return drifting === 0 ? EXIT.OK : EXIT.FAILED;
  } finally {
    api.close();
  }
}

const describeDrift = (d) => `${d.check}${d.subject ? ` ${d.subject}` : ''}: expected ${d.expected}, found ${d.found} (off by ${d.size})`;

async function allCampaignIds(api) {
  const ids = [];
  let after = null;
  for (;;) {
    const data = await api.request('query($after: String) { campaigns(first: 100, after: $after) { pageInfo { hasNextPage endCursor } edges { node { id } } } }', { after });
    ids.push(...data.campaigns.edges.map((e) => e.node.id));
    if (!data.campaigns.pageInfo.hasNextPage) return ids;
    after = data.campaigns.pageInfo.endCursor;
  }
}

async function verifyBallotCommand(values, timeoutMs) {
  const command = 'verify-ballot';
  if (!values.campaign && !values.file) throw usage('--campaign <id> or --file <ballot.json> is required', command);
  if (values.file && values.save) throw usage('--save writes what --campaign read; it does not go with --file', command);
  if (values.save) writableTarget(values.save);
  let published = null;
  if (values.file) {
    readableFile(values.file);
    const file = readBallotFile(readFileSync(values.file, 'utf8'), values.file);
    if (!file.ok) throw new CliError(file.reason);
    published = file.published;
  }
  let fromApi = null;
  if (values.campaign) {
    const api = client(endpointOf(values.url, command), apiKey(values.key), timeoutMs);
    try {
      fromApi = await readBallot(api, values.campaign, !published);
    } finally {
      api.close();
    }
  }
  if (published && fromApi) {
    for (const field of ['seedCommitment', 'seed', 'entriesDigest', 'entryCount', 'winners']) {
      if (published.ballot[field] !== fromApi.ballot[field]) {
        throw new CliError(`mismatch: the file's ${field} is ${JSON.stringify(published.ballot[field])}, the API shows ${JSON.stringify(fromApi.ballot[field])} for campaign ${values.campaign}`);
      }
    }
  }
  const { ballot, entries } = published ?? fromApi;
  const result = verifyBallot(ballot, entries);
  if (!result.ok) throw new CliError(`mismatch: ${result.mismatch}`);
  if (values.save) {
    const draft = `${values.save}.${process.pid}.tmp`;
    await writeFile(draft, `${JSON.stringify({ campaignId: values.campaign, ballot, entries }, null, 1)}\n`);
    await rename(draft, values.save);
  }
  process.stdout.write(`verified: ${result.summary}\n`);
  return EXIT.OK;
}

/** The ballot, and (when `withEntries`) every drawn entry in rank order, from the API. */
async function readBallot(api, campaignId, withEntries) {
  const { campaign } = await api.request(BALLOT, { id: campaignId });
  if (!campaign) throw new CliError(`no campaign ${campaignId} at ${api.where} (check --campaign)`);
  if (campaign.mode !== 'BALLOT' || !campaign.ballot) throw new CliError(`campaign ${campaignId} has no ballot (mode ${campaign.mode}, or not opened yet)`);
  if (!campaign.ballot.drawnAt) throw new CliError(`the ballot of campaign ${campaignId} is not drawn yet: there is nothing to verify`);
  const entries = [];
  let after = null;
  while (withEntries) {
    const data = await api.request(BALLOT_ENTRIES, { id: campaignId, after });
    const page = data.campaign.ballotEntries;
    for (const { node } of page.edges) entries.push({ id: node.id, quantity: node.quantity, status: node.status, rank: node.rank, wonInDraw: node.wonInDraw, partnerId: node.partner.id });
    if (!page.pageInfo.hasNextPage) break;
    after = page.pageInfo.endCursor;
  }
  return { ballot: campaign.ballot, entries };
}

function interrupt(signal) {
  let note = '';
  for (const undo of onInterrupt) {
    try {
      note += undo();
    } catch {
      /* exiting anyway */
    }
  }
  process.stderr.write(`tessera: interrupted by ${signal}${note}\n`);
  process.exit(signal === 'SIGINT' ? 130 : 143);
}

process.once('SIGINT', interrupt);
process.once('SIGTERM', interrupt);

main(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
  })
  .catch((error) => {
    if (error instanceof CliError) {
      process.stderr.write(`tessera: ${error.message}\n`);
      process.exitCode = error.exitCode;
    } else {
      process.stderr.write(`tessera: unexpected error: ${error?.stack ?? error}\n`);
      process.exitCode = EXIT.FAILED;
    }
  })
  .finally(() => {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  });
