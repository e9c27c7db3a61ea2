// tessera verify-ballot: recompute a drawn ballot from what it published, read from the API
// (--campaign) or from a file written by --save (--file), or both, the file tied to what the API
// shows. The check itself is bin/verify-ballot.js, one dependency-free file that anyone can copy and
// run alone on a published file; this command feeds it.
import { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { readBallotFile, verifyBallot, type Ballot, type BallotEntry } from '../../bin/verify-ballot';
import { createClient, type Client } from './client';
import { CliError, usage } from './errors';
import { apiKey, withConnectionOptions, endpointOf, readableFile, timeoutMs, writableTarget, type ConnectionOptions } from './options';

const COMMAND = 'verify-ballot';

interface VerifyBallotOptions extends ConnectionOptions {
  campaign?: string;
  file?: string;
  save?: string;
}

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

/** The fields of a published file that must match what the API shows. */
const TIED_FIELDS = ['seedCommitment', 'seed', 'entriesDigest', 'entryCount', 'winners'] as const;

export function verifyBallotCommand(): Command {
  return withConnectionOptions(
    new Command(COMMAND)
      .summary('recompute a drawn ballot from its published data: "verified", or the first mismatch')
      .usage(`--campaign <id> [--save <file.json>] [options]\n       tessera ${COMMAND} --file <ballot.json> [--campaign <id>] [options]`)
      .description(
        'Recomputes a drawn BALLOT campaign from what it published, as anyone can: the seed against the commitment published at the opening, entriesDigest against the entries, every entry\'s rank (sha256("<seed>:<entry id>") ascending) and every draw result (the walk: an entry wins when the tickets not yet won cover its quantity, within Ballot.partnerLimits). ' +
          'Prints "verified: ..." and exits 0, or names the first mismatch and exits 1.\n\n' +
          '--campaign reads the ballot and every entry from the API (an admin key reads every entry; a partner key reads only its own, so a partner verifies with the operator\'s published file). ' +
          '--save writes what was read, verified, to a file that can be published. --file verifies such a file without the API; with --campaign as well, the file\'s seed, commitment and digest must also be the ones the API shows for that campaign (a partner key is enough).\n\n' +
          'The check alone, on a published file, with nothing but node:\n  node bin/verify-ballot.js <ballot.json>',
      )
      .option('--campaign <id>', 'the campaign')
      .option('--file <path>', 'a ballot file written by --save')
      .option('--save <path>', 'write the ballot and its entries as JSON after verifying them')
  ).action(async (values: VerifyBallotOptions) => {
    const timeout = timeoutMs(values, COMMAND);
    if (!values.campaign && !values.file) throw usage('--campaign <id> or --file <ballot.json> is required', COMMAND);
    if (values.file && values.save) throw usage('--save writes what --campaign read; it does not go with --file', COMMAND);
    if (values.save) writableTarget(values.save);
    await verifyBallotCli(values, timeout);
  });
}

async function verifyBallotCli(values: VerifyBallotOptions, timeout: number): Promise<void> {
  let published: { ballot: Ballot; entries: BallotEntry[] } | null = null;
  if (values.file) {
    readableFile(values.file);
    const file = readBallotFile(readFileSync(values.file, 'utf8'), values.file);
    if (!file.ok) throw new CliError(file.reason);
    published = file.published;
  }
  let fromApi: { ballot: Ballot; entries: BallotEntry[] } | null = null;
  if (values.campaign) {
    const api = createClient(endpointOf(values.url, COMMAND), apiKey(values.key), timeout);
    try {
      fromApi = await readBallot(api, values.campaign, !published);
    } finally {
      api.close();
    }
  }
  if (published && fromApi) {
    for (const field of TIED_FIELDS) {
      if (published.ballot[field] !== fromApi.ballot[field]) {
        throw new CliError(
          `mismatch: the file's ${field} is ${JSON.stringify(published.ballot[field])}, the API shows ${JSON.stringify(fromApi.ballot[field])} for campaign ${values.campaign}`,
        );
      }
    }
  }
  const { ballot, entries } = (published ?? fromApi)!;
  const result = verifyBallot(ballot, entries);
  if (!result.ok) throw new CliError(`mismatch: ${result.mismatch}`);
  if (values.save) {
    const draft = `${values.save}.${process.pid}.tmp`;
    await writeFile(draft, `${JSON.stringify({ campaignId: values.campaign, ballot, entries }, null, 1)}\n`);
    await rename(draft, values.save);
  }
  process.stdout.write(`verified: ${result.summary}\n`);
}

interface BallotAnswer {
  campaign: { id: string; mode: string; ballot: Ballot | null } | null;
}

interface EntriesPage {
  campaign: {
    ballotEntries: {
      pageInfo: { hasNextPage: boolean; endCursor: string | null };
      edges: { node: Omit<BallotEntry, 'partnerId'> & { partner: { id: string } } }[];
    };
  };
}

/** The ballot, and (when `withEntries`) every drawn entry in rank order, from the API. */
async function readBallot(api: Client, campaignId: string, withEntries: boolean): Promise<{ ballot: Ballot; entries: BallotEntry[] }> {
  const { campaign } = await api.request<BallotAnswer>(BALLOT, { id: campaignId });
  if (!campaign) throw new CliError(`no campaign ${campaignId} at ${api.where} (check --campaign)`);
  if (campaign.mode !== 'BALLOT' || !campaign.ballot) throw new CliError(`campaign ${campaignId} has no ballot (mode ${campaign.mode}, or not opened yet)`);
  if (!campaign.ballot.drawnAt) throw new CliError(`the ballot of campaign ${campaignId} is not drawn yet: there is nothing to verify`);
  const entries: BallotEntry[] = [];
  let after: string | null = null;
  while (withEntries) {
    const data: EntriesPage = await api.request<EntriesPage>(BALLOT_ENTRIES, { id: campaignId, after });
    const page = data.campaign.ballotEntries;
    for (const { node } of page.edges) {
      entries.push({ id: node.id, quantity: node.quantity, status: node.status, rank: node.rank, wonInDraw: node.wonInDraw, partnerId: node.partner.id });
    }
    if (!page.pageInfo.hasNextPage) break;
    after = page.pageInfo.endCursor;
  }
  return { ballot: campaign.ballot, entries };
}
