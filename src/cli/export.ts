// tessera export: a campaign's allocations as CSV (csv.ts), a page at a time. Nothing is written
// before the first page has arrived; a file appears only whole, at the end (written under a
// temporary name beside it, then renamed), and a failure or an interrupt leaves none behind.
import { Command } from 'commander';
import { unlinkSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { createClient, type Client } from './client';
import { EXPORT_QUERY, HEADER, csvRow, type ExportedAllocation } from './csv';
import { CliError, describeFsError, usage } from './errors';
import { onInterrupt } from './interrupt';
import { apiKey, withConnectionOptions, endpointOf, timeoutMs, writableTarget, type ConnectionOptions } from './options';
import { progressBar, type Bar } from './progress';

interface ExportOptions extends ConnectionOptions {
  campaign?: string;
  out?: string;
}

interface ExportPage {
  campaign: {
    allocations: { totalCount: number; pageInfo: { hasNextPage: boolean; endCursor: string | null }; edges: { node: ExportedAllocation }[] };
  } | null;
}

/** Where the CSV goes: standard output, or a file that appears when finished. */
interface Sink {
  write(text: string): Promise<void>;
  finish(): Promise<void>;
  /** Synchronous enough for an interrupt. */
  abort(): void;
  abortAsync(): Promise<void>;
  describe: string;
}

export function exportCommand(): Command {
  return withConnectionOptions(
    new Command('export')
      .summary("write a campaign's allocations as CSV")
      .usage('--campaign <id> [--out <file.csv>] [options]')
      .description(
        "Writes the campaign's allocations, oldest first, as CSV: to --out, or to standard output. A file appears only when the export is complete (it is written under a temporary name, then renamed); standard output gets nothing before the first page has been read.\n\n" +
          'Columns: sequence, allocation_id, ticket_code, holder, partner_id, partner_name, status, allocated_at, expires_at, released_at, idempotency_key, metadata (JSON). Every text value is quoted (RFC 4180); the sequence, a number, is bare.\n\n' +
          "Spreadsheet-safe whichever of , ; tab a spreadsheet splits on: wherever a cell could begin - at the start of a value, and right after each , ; tab, carriage return or line feed in it - a ' is inserted where what follows begins with = + - @ (after any whitespace or double quotes; also their full-width forms), with ' or with NUL, and at the start also where a tab, carriage return or line feed begins the value. " +
          "To get the exact value back, parse the CSV, then remove one leading ' from the value and the ' right after each , ; tab, carriage return or line feed in it, wherever there is one: each is an added one.",
      )
      .option('--campaign <id>', 'the campaign (required)')
      .option('--out <file|->', 'the CSV file to write (default: standard output)')
  ).action(async (values: ExportOptions) => {
    const timeout = timeoutMs(values, 'export');
    if (!values.campaign) throw usage('--campaign <id> is required', 'export');
    const out = values.out === undefined || values.out === '-' ? null : values.out;
    if (out) writableTarget(out);
    const api = createClient(endpointOf(values.url, 'export'), apiKey(values.key), timeout);
    try {
      await exportAllocations(api, values.campaign, out);
    } finally {
      api.close();
    }
  });
}

async function exportAllocations(api: Client, campaignId: string, out: string | null): Promise<void> {
  let sink: Sink | null = null;
  let bar: Bar | null = null;
  let written = 0;
  const forget = onInterrupt(() => {
    bar?.stop();
    sink?.abort();
    return out ? `; ${out} was not written` : `; ${written} allocations had been written`;
  });
  try {
    let after: string | null = null;
    for (;;) {
      const data: ExportPage = await api.request<ExportPage>(EXPORT_QUERY, { id: campaignId, after });
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
          bar = progressBar('exporting |{bar}| {value}/{total} allocations');
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
    await sink?.abortAsync();
    if (!(error instanceof CliError)) throw error;
    const note = out ? `; ${out} was not written` : written > 0 && !error.told ? `; standard output got only the first ${written} allocations` : '';
    throw new CliError(`${error.message}${note}`, error.exitCode);
  } finally {
    forget();
  }
  process.stderr.write(`${written} allocations exported${out ? ` to ${out}` : ''}\n`);
}

async function writeTo(sink: Sink, text: string, written: number): Promise<void> {
  try {
    await sink.write(text);
  } catch (error) {
    if (sink.describe !== 'standard output') throw new CliError(`cannot write ${sink.describe}: ${describeFsError(error)}`);
    const failure = new CliError(
      (error as NodeJS.ErrnoException).code === 'EPIPE' ? `standard output was closed after ${written} allocations` : `cannot write standard output: ${describeFsError(error)}`,
    );
    failure.told = true;
    throw failure;
  }
}

/** Standard output, written only once there is something to write; EPIPE and the like become errors. */
function stdoutSink(): Sink {
  let broken: Error | null = null;
  const onError = (error: Error) => (broken ??= error);
  process.stdout.on('error', onError);
  return {
    async write(text) {
      if (broken) throw broken;
      if (process.stdout.write(text)) return;
      await new Promise<void>((resolve) => {
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
    async abortAsync() {
      process.stdout.off('error', onError);
    },
    describe: 'standard output',
  };
}

/** A file written under a temporary name beside it, renamed into place when complete. */
async function fileSink(out: string): Promise<Sink> {
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
    // The descriptor closes with the process.
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
