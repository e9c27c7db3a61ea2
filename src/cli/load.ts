// tessera load: ticket codes from a CSV file (or standard input) into a campaign, with loadTickets,
// sorted and in batches, several in flight, with a progress bar that counts the codes the server
// has acknowledged. Loading is idempotent (a code already there is a duplicate), so a failed load
// is finished by running the same command again, and every failure says how far it got.
import { Command } from 'commander';
import type { Readable } from 'node:stream';
import { createClient, type Client } from './client';
import { countCodes, inputName, openInput, readCodes } from './codes';
import { CliError, describeFsError, usage } from './errors';
import { onInterrupt } from './interrupt';
import { apiKey, withConnectionOptions, endpointOf, integer, readableFile, timeoutMs, type ConnectionOptions } from './options';
import { PROGRESS_MS, progressBar } from './progress';
import { sortedWindows, type Window } from './sortedBatches';

const MAX_BATCH = 10_000; // loadTickets accepts at most 10,000 codes per call
const MAX_CONCURRENCY = 16;
// Codes sorted at a time (see sortedBatches.ts). The tests set a small one through TESSERA_LOAD_SORT_WINDOW.
const SORT_WINDOW = Number.parseInt(process.env.TESSERA_LOAD_SORT_WINDOW ?? '', 10) || 1_000_000;
const figure = (n: number) => n.toLocaleString('en-US');

const CAMPAIGN = 'query($id: ID!) { campaign(id: $id) { id name status } }';
const LOAD = 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded duplicates } }';

interface LoadOptions extends ConnectionOptions {
  campaign?: string;
  file?: string;
  batch?: string;
  concurrency?: string;
}

export function loadCommand(): Command {
  return withConnectionOptions(
    new Command('load')
      .summary('load ticket codes from a CSV file into a campaign')
      .usage('--campaign <id> --file <codes.csv|-> [options]')
      .description(
        `Loads ticket codes into a campaign with loadTickets, a batch at a time. The first field of each record is a code (RFC 4180: quotes, and commas, line breaks and doubled quotes inside them); a first code "code" is a header and skipped; empty lines are skipped. ` +
          `Codes are sent sorted, in requests of --batch codes each: the file is read in parts of up to ${figure(SORT_WINDOW)} codes, each sorted (the database adds sorted codes fastest). ` +
          `The progress bar (on stderr) counts codes the server has acknowledged; when stderr is not a terminal it is one line at each 10% and at least every ${PROGRESS_MS / 1000} s while codes are acknowledged.\n\n` +
          'Loading is idempotent: codes already in the campaign count as duplicates, so after a failure the same command can simply be run again.',
      )
      .option('--campaign <id>', 'the campaign (required; DRAFT or OPEN)')
      .option('--file <path|->', 'the CSV of codes, or - for standard input (required)')
      .option('--batch <n>', `codes per loadTickets request, 1 to ${figure(MAX_BATCH)} (the most one call takes; default ${figure(MAX_BATCH)})`)
      .option('--concurrency <n>', `requests in flight, 1 to ${MAX_CONCURRENCY} (default 2)`)
  ).action(async (values: LoadOptions) => {
    const timeout = timeoutMs(values, 'load');
    if (!values.campaign) throw usage('--campaign <id> is required', 'load');
    if (!values.file) throw usage('--file <codes.csv> (or - for standard input) is required', 'load');
    const batch = integer(values.batch, 'batch', MAX_BATCH, 1, MAX_BATCH, 'load');
    const concurrency = integer(values.concurrency, 'concurrency', 2, 1, MAX_CONCURRENCY, 'load');
    if (values.file !== '-') readableFile(values.file);
    const api = createClient(endpointOf(values.url, 'load'), apiKey(values.key), timeout);
    try {
      await load(api, values.campaign, values.file, batch, concurrency);
    } finally {
      api.close();
    }
  });
}

async function load(api: Client, campaignId: string, file: string, batchSize: number, concurrency: number): Promise<void> {
  await loadable(api, campaignId);
  const started = Date.now();
  const { input, windows, first, total } = await openCodes(file);
  const totals = { read: 0, loaded: 0, duplicates: 0 };
  const acknowledged = () => totals.loaded + totals.duplicates;
  const rate = () => Math.round(acknowledged() / Math.max((Date.now() - started) / 1000, 0.001));
  const bar = progressBar(
    total === null
      ? 'loading | {value} codes loaded of {read} read | {duplicates} duplicates | {rate} codes/s'
      : 'loading |{bar}| {percentage}% | {value} of {total} codes loaded | {duplicates} duplicates | {rate} codes/s',
    { hideCursor: true },
  );
  const progressNote = () =>
    acknowledged() > 0
      ? `; ${acknowledged()} of ${total ?? totals.read} codes had been acknowledged (${totals.loaded} loaded, ${totals.duplicates} duplicates): run the same command again to load the rest (codes already loaded count as duplicates)`
      : '; no code had been loaded';
  const forget = onInterrupt(() => {
    bar.stop();
    input.destroy();
    return progressNote();
  });

  bar.start(total ?? 0, 0, { read: 0, duplicates: 0, rate: 0 });
  let failure: CliError | null = null;
  const inFlight = new Set<Promise<void>>();
  const send = (codes: string[], window: Window) => {
    const p: Promise<void> = api
      .request<{ loadTickets: { loaded: number; duplicates: number } }>(LOAD, { id: campaignId, codes }, { cancelled: () => failure !== null })
      .then((data) => {
        totals.loaded += data.loadTickets.loaded;
        totals.duplicates += data.loadTickets.duplicates;
        if (total !== null && acknowledged() > bar.getTotal()) bar.setTotal(acknowledged());
        bar.update(acknowledged(), { read: totals.read, duplicates: totals.duplicates, rate: rate() });
      })
      .catch((error: unknown) => {
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
    if (failure) throw new CliError(`${(failure as CliError).message}${progressNote()}`, (failure as CliError).exitCode);
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`cannot read ${inputName(file)}: ${describeFsError(error)}${progressNote()}`);
  } finally {
    input.destroy();
    bar.stop();
    forget();
  }
  const seconds = (Date.now() - started) / 1000;
  process.stderr.write(
    `${totals.read} codes read, ${totals.loaded} loaded, ${totals.duplicates} duplicates skipped in ${seconds.toFixed(1)} s (${Math.round(totals.read / Math.max(seconds, 0.001))} codes/s)\n`,
  );
}

/** The campaign exists and takes codes. */
async function loadable(api: Client, campaignId: string): Promise<void> {
  const { campaign } = await api.request<{ campaign: { name: string; status: string } | null }>(CAMPAIGN, { id: campaignId });
  if (!campaign) throw new CliError(`no campaign ${campaignId} at ${api.where} (check --campaign)`);
  if (campaign.status === 'CLOSED') throw new CliError(`CAMPAIGN_CLOSED: campaign ${campaignId} ("${campaign.name}") is CLOSED; tickets cannot be added to it`);
}

/**
 * The code file's windows, the first one read, and the bar's 100%: the first window's size when it
 * is the whole file; a longer file is counted first (read twice); standard input is not known until
 * its end (null).
 */
async function openCodes(file: string): Promise<{ input: Readable; windows: AsyncGenerator<Window>; first: IteratorResult<Window>; total: number | null }> {
  const input = openInput(file);
  const windows = sortedWindows(readCodes(input), SORT_WINDOW);
  let first: IteratorResult<Window>;
  try {
    first = await windows.next();
  } catch (error) {
    input.destroy();
    throw new CliError(`cannot read ${inputName(file)}: ${describeFsError(error)}`);
  }
  const whole = (first.value as Window).last;
  const total = whole ? (first.value as Window).codes.length : file === '-' ? null : await countCodes(file);
  if (total === 0 && file !== '-') {
    input.destroy();
    throw new CliError(`${file} holds no codes`);
  }
  return { input, windows, first, total };
}

/** "codes[17] must be …" names a code in the batch: say which line of the file it came from (its first). */
function withLine(error: unknown, codes: string[], window: Window, file: string): CliError {
  if (!(error instanceof CliError)) return new CliError(String((error as Error)?.message ?? error));
  const index = /codes\[(\d+)\]/.exec(error.message)?.[1];
  const code = index === undefined ? undefined : codes[Number(index)];
  if (code === undefined) return error;
  const line = window.lines[window.codes.indexOf(code)];
  const where = file === '-' ? `line ${line} of standard input` : `${file} line ${line}`;
  return new CliError(`${error.message} — ${where}: ${JSON.stringify(code)}`, error.exitCode);
}
