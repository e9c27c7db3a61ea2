#!/usr/bin/env node
// Tessera's command line for operators (npx tessera …). It speaks the public GraphQL API only.
//
//   tessera load   --campaign <id> --file <codes.csv|->   load codes in batches, with a progress bar
//   tessera export --campaign <id> [--out <file.csv>]     the campaign's allocations as CSV
//
// Options: --url (default $TESSERA_URL or http://localhost:4000), --key (default $TESSERA_API_KEY
// or $ADMIN_API_KEY), --batch (codes per request, default 10000), --concurrency (default 2).
'use strict';
const { createReadStream, createWriteStream, statSync } = require('node:fs');
const { createInterface } = require('node:readline');
const { parseArgs } = require('node:util');
const cliProgress = require('cli-progress');

const HELP = `Usage:
  tessera load   --campaign <id> --file <codes.csv|->   [--batch 10000] [--concurrency 2]
  tessera export --campaign <id> [--out <file.csv>]
Common options: --url <http://host:port> (env TESSERA_URL), --key <admin key> (env TESSERA_API_KEY or ADMIN_API_KEY)
The CSV's first column is the code; a first line "code" is a header and skipped.`;

async function main(argv) {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      campaign: { type: 'string' },
      file: { type: 'string' },
      out: { type: 'string' },
      url: { type: 'string' },
      key: { type: 'string' },
      batch: { type: 'string' },
      concurrency: { type: 'string' },
    },
  });
  const url = `${(values.url ?? process.env.TESSERA_URL ?? 'http://localhost:4000').replace(/\/+$/, '')}/graphql`;
  const key = values.key ?? process.env.TESSERA_API_KEY ?? process.env.ADMIN_API_KEY;
  if (command !== 'load' && command !== 'export') return fail(HELP, command === 'help' || command === undefined ? 0 : 2);
  if (!values.campaign) return fail('--campaign <id> is required.\n\n' + HELP);
  if (!key) return fail('No API key: pass --key or set TESSERA_API_KEY (or ADMIN_API_KEY).');
  const api = client(url, key);
  if (command === 'load') {
    if (!values.file) return fail('--file <codes.csv> (or - for standard input) is required.\n\n' + HELP);
    await load(api, values.campaign, values.file, Number(values.batch ?? 10_000), Number(values.concurrency ?? 2));
  } else {
    await exportAllocations(api, values.campaign, values.out);
  }
}

function fail(message, code = 2) {
  (code === 0 ? process.stdout : process.stderr).write(`${message}\n`);
  process.exitCode = code;
}

function client(url, key) {
  return async (query, variables) => {
    for (let attempt = 1; ; attempt += 1) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query, variables }),
      });
      // Busy or rate-limited: wait as told, then again (a load is idempotent: duplicates are skipped).
      if ((res.status === 503 || res.status === 429) && attempt < 10) {
        await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
        continue;
      }
      const body = await res.json();
      if (body.errors?.length) {
        const e = body.errors[0];
        throw new Error(`${e.extensions?.code ?? 'ERROR'}: ${e.message}`);
      }
      return body.data;
    }
  };
}

async function load(api, campaignId, file, batchSize, concurrency) {
  const started = Date.now();
  const total = file === '-' ? 0 : statSync(file).size;
  const input = file === '-' ? process.stdin : createReadStream(file);
  let bytes = 0;
  input.on('data', (chunk) => (bytes += chunk.length));
  const bar = new cliProgress.SingleBar(
    { format: 'loading |{bar}| {percentage}% | {codes} codes read | {loaded} loaded, {duplicates} duplicates | {rate} codes/s', hideCursor: true, stream: process.stderr, noTTYOutput: true, notTTYSchedule: 2000 },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total || 1, 0, { codes: 0, loaded: 0, duplicates: 0, rate: 0 });
  const totals = { codes: 0, loaded: 0, duplicates: 0 };
  const inFlight = new Set();
  const send = (codes) => {
    const p = api('mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded duplicates } }', { id: campaignId, codes }).then(
      (data) => {
        totals.loaded += data.loadTickets.loaded;
        totals.duplicates += data.loadTickets.duplicates;
        const seconds = (Date.now() - started) / 1000;
        bar.update(total ? bytes : 1, { ...totals, rate: Math.round((totals.loaded + totals.duplicates) / Math.max(seconds, 0.001)) });
      },
    );
    inFlight.add(p);
    p.finally(() => inFlight.delete(p)).catch(() => undefined);
    return p;
  };
  let batch = [];
  let first = true;
  for await (const line of createInterface({ input, crlfDelay: Infinity })) {
    const code = line.split(',')[0].trim().replace(/^"(.*)"$/, '$1');
    if (first && /^(code|codes|ticket|tickets)$/i.test(code)) {
      first = false;
      continue;
    }
    first = false;
    if (!code) continue;
    batch.push(code);
    totals.codes += 1;
    if (batch.length >= batchSize) {
      if (inFlight.size >= concurrency) await Promise.race(inFlight);
      send(batch);
      batch = [];
    }
  }
  if (batch.length) send(batch);
  await Promise.all(inFlight);
  bar.update(total || 1);
  bar.stop();
  const seconds = (Date.now() - started) / 1000;
  process.stderr.write(
    `${totals.codes} codes read, ${totals.loaded} loaded, ${totals.duplicates} duplicates skipped in ${seconds.toFixed(1)} s (${Math.round(totals.codes / seconds)} codes/s)\n`,
  );
}

const EXPORT = `query($id: ID!, $after: String) {
  campaign(id: $id) {
    allocations(first: 100, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node { id sequence status holder idempotencyKey allocatedAt expiresAt releasedAt metadata ticket { code } partner { id name } } }
    }
  }
}`;

const csv = (value) => {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

async function exportAllocations(api, campaignId, out) {
  const output = out ? createWriteStream(out) : process.stdout;
  output.write('sequence,allocation_id,ticket_code,holder,partner_id,partner_name,status,allocated_at,expires_at,released_at,idempotency_key,metadata\n');
  let after = null;
  let written = 0;
  let bar = null;
  for (;;) {
    const data = await api(EXPORT, { id: campaignId, after });
    if (!data.campaign) throw new Error(`NOT_FOUND: no campaign ${campaignId}`);
    const page = data.campaign.allocations;
    if (!bar && out) {
      bar = new cliProgress.SingleBar({ format: 'exporting |{bar}| {value}/{total} allocations', stream: process.stderr, noTTYOutput: true, notTTYSchedule: 2000 }, cliProgress.Presets.shades_classic);
      bar.start(page.totalCount, 0);
    }
    for (const { node: a } of page.edges) {
      output.write(
        [a.sequence, a.id, a.ticket.code, a.holder, a.partner.id, a.partner.name, a.status, a.allocatedAt, a.expiresAt, a.releasedAt, a.idempotencyKey, a.metadata].map(csv).join(',') + '\n',
      );
      written += 1;
    }
    bar?.update(written);
    if (!page.pageInfo.hasNextPage) break;
    after = page.pageInfo.endCursor;
  }
  bar?.stop();
  if (out) await new Promise((resolve) => output.end(resolve));
  process.stderr.write(`${written} allocations exported${out ? ` to ${out}` : ''}\n`);
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(`tessera: ${error.message}\n`);
  process.exitCode = 1;
});
