// The operators' CLI (bin/tessera.js): load a CSV of codes in batches, export allocations as CSV.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from './helpers/testServer';

const run = promisify(execFile);
const BIN = path.resolve(__dirname, '../bin/tessera.js');

let server: TestServer;
let base: string;
beforeAll(async () => {
  server = await startTestServer();
  base = server.url.replace(/\/graphql$/, '');
});
afterAll(() => server.stop());

test('tessera load reads a CSV in batches, counts duplicates, and reports its progress', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-cli-'));
  const file = path.join(dir, 'codes.csv');
  const codes = Array.from({ length: 25_000 }, (_, i) => `CLI-${i},"row ${i}"`);
  writeFileSync(file, ['code,comment', ...codes, 'CLI-7,duplicate'].join('\n'));
  const campaignId = await server.createCampaign();
  const { stderr } = await run(process.execPath, [BIN, 'load', '--campaign', campaignId, '--file', file, '--url', base, '--key', ADMIN_KEY, '--batch', '4000']);
  expect(stderr).toMatch(/25001 codes read, 25000 loaded, 1 duplicates skipped/);
  expect(stderr).toMatch(/loading \|/);
  const stats = await server.gql(ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { stats { total } } }', { id: campaignId });
  expect(stats.body.data!.campaign.stats.total).toBe(25_000);
});

test('tessera export writes every allocation as a CSV row', async () => {
  const partner = await server.createPartner('CSV, Inc.');
  const campaignId = await server.openCampaignWith(250);
  await Promise.all(
    Array.from({ length: 230 }, (_, i) => server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: `h${i}`, metadata: { note: `a "quoted", ${i}` } } })),
  );
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-cli-'));
  const out = path.join(dir, 'allocations.csv');
  await run(process.execPath, [BIN, 'export', '--campaign', campaignId, '--out', out, '--url', base, '--key', ADMIN_KEY]);
  const lines = readFileSync(out, 'utf8').trim().split('\n');
  expect(lines[0]).toMatch(/^sequence,allocation_id,ticket_code,holder/);
  expect(lines).toHaveLength(231);
  expect(lines.slice(1).every((l) => l.includes('"CSV, Inc."'))).toBe(true);
  expect(new Set(lines.slice(1).map((l) => l.split(',')[2])).size).toBe(230);
});

test('tessera without a key or a campaign explains what it needs', async () => {
  await expect(run(process.execPath, [BIN, 'export', '--url', base], { env: { ...process.env, ADMIN_API_KEY: '', TESSERA_API_KEY: '' } })).rejects.toMatchObject({
    stderr: expect.stringMatching(/--campaign <id> is required/),
  });
});
