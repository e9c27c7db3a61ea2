// tessera verify: each campaign's drifts (verifyCampaign), repaired with --repair (repairCampaign).
// The verdict is on standard output; the exit status is 1 when a campaign drifts.
import { Command } from 'commander';
import { createClient, type Client } from './client';
import type { Drift } from '../db/verifyCampaign';
import { EXIT } from './errors';
import { apiKey, withConnectionOptions, endpointOf, timeoutMs, type ConnectionOptions } from './options';

interface VerifyOptions extends ConnectionOptions {
  campaign?: string;
  repair?: boolean;
}

interface Verification {
  ok: boolean;
  campaign: { id: string; name: string };
  drifts: Drift[];
  repaired: Drift[];
}

const DRIFT_FIELDS = 'check subject expected found size repairable';
const VERIFICATION = `ok campaign { id name } drifts { ${DRIFT_FIELDS} } repaired { ${DRIFT_FIELDS} }`;
const CAMPAIGNS = 'query($after: String) { campaigns(first: 100, after: $after) { pageInfo { hasNextPage endCursor } edges { node { id } } } }';

export function verifyCommand(): Command {
  return withConnectionOptions(
    new Command('verify')
      .summary('recompute every counter and invariant of campaigns from their rows; --repair fixes counters')
      .usage('[--campaign <id>] [--repair] [options]')
      .description(
        'Asks the server to recompute, from the rows, every counter, stats figure, quota, allotment and live-allocation invariant of a campaign (verifyCampaign), or of every campaign when --campaign is left out, and prints each drift with its size. ' +
          'With --repair, the counters that drifted are fixed (repairCampaign: one transaction under the campaign\'s gate, audited); drifts of rows (a ticket\'s status, an allotment) are reported and never touched — they need a person.\n\n' +
          'Exit status 0 when nothing drifts (after the repair, with --repair), 1 otherwise.',
      )
      .option('--campaign <id>', 'the campaign (default: every campaign)')
      .option('--repair', 'fix the counters that drifted')
  ).action(async (values: VerifyOptions) => {
    const api = createClient(endpointOf(values.url, 'verify'), apiKey(values.key), timeoutMs(values, 'verify'));
    try {
      process.exitCode = await verify(api, values.campaign, values.repair === true);
    } finally {
      api.close();
    }
  });
}

async function verify(api: Client, campaign: string | undefined, repair: boolean): Promise<number> {
  const ids = campaign ? [campaign] : await allCampaignIds(api);
  const field = repair ? 'repairCampaign' : 'verifyCampaign';
  const operation = repair ? 'mutation' : 'query';
  let drifting = 0;
  for (const id of ids) {
    const data = await api.request<Record<string, Verification>>(`${operation}($id: ID!) { ${field}(id: $id) { ${VERIFICATION} } }`, { id });
    const result = data[field];
    const name = `${result.campaign.name} (${result.campaign.id})`;
    for (const d of result.repaired) process.stdout.write(`${name}: repaired ${describeDrift(d)}\n`);
    for (const d of result.drifts) process.stdout.write(`${name}: ${d.repairable ? 'DRIFT' : 'DRIFT (a row: not repaired)'} ${describeDrift(d)}\n`);
    if (result.ok) process.stdout.write(`${name}: ok${result.repaired.length ? ' after the repair' : ''}\n`);
    else drifting += 1;
  }
  process.stdout.write(`${ids.length} campaign${ids.length === 1 ? '' : 's'} verified, ${drifting} with drift\n`);
  return drifting === 0 ? EXIT.OK : EXIT.FAILED;
}

const describeDrift = (d: Drift) => `${d.check}${d.subject ? ` ${d.subject}` : ''}: expected ${d.expected}, found ${d.found} (off by ${d.size})`;

async function allCampaignIds(api: Client): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (;;) {
    type Page = { campaigns: { pageInfo: { hasNextPage: boolean; endCursor: string | null }; edges: { node: { id: string } }[] } };
    const data: Page = await api.request<Page>(CAMPAIGNS, { after });
    ids.push(...data.campaigns.edges.map((e) => e.node.id));
    if (!data.campaigns.pageInfo.hasNextPage) return ids;
    after = data.campaigns.pageInfo.endCursor;
  }
}
