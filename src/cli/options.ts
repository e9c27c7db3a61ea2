// What every command is given the same way: the server (--url, $TESSERA_URL), the key (--key,
// $TESSERA_API_KEY, ./.tessera/admin-api-key), the deadline of each request (--timeout); and the
// checks of numbers and paths that turn a mistake into one line and exit 2 before any request.
import { Command, Option } from 'commander';
import { accessSync, constants as fsConstants, existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CliError, EXIT, describeFsError, usage } from './errors';

export const DEFAULT_URL = 'http://localhost:4000';
export const KEY_FILE = path.join('.tessera', 'admin-api-key');
const DEFAULT_TIMEOUT_SECONDS = 60;

export interface ConnectionOptions {
  url?: string;
  key?: string;
  timeout?: string;
}

/** Where the key came from, for messages: "--key", "TESSERA_API_KEY" or the file's path. */
export interface ApiKey {
  key: string;
  source: string;
}

/** Adds --url, --key, --timeout and -h to a command, listed after its own options as "Options for every command". */
export function withConnectionOptions(command: Command): Command {
  return command
    .optionsGroup('Options for every command:')
    .addOption(new Option('--url <url>', `the Tessera server (default: $TESSERA_URL, else ${DEFAULT_URL}); /graphql is added unless the URL already ends with it`))
    .addOption(
      new Option(
        '--key <key>',
        `the admin API key (default: $TESSERA_API_KEY, else the file ${KEY_FILE} in the current directory, which \`npm start\` writes in development when ADMIN_API_KEY is not set)`,
      ),
    )
    .addOption(new Option('--timeout <s>', `seconds to wait for each HTTP request (default ${DEFAULT_TIMEOUT_SECONDS})`))
    .helpOption('-h, --help', 'this help');
}

/** The GraphQL endpoint: --url, else $TESSERA_URL, else the default; /graphql added when missing. */
export function endpointOf(option: string | undefined, command: string): URL {
  const raw = option ?? (process.env.TESSERA_URL || DEFAULT_URL);
  const from = option !== undefined ? '--url' : process.env.TESSERA_URL ? 'TESSERA_URL' : 'the default URL';
  let url: URL;
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
export function apiKey(option: string | undefined): ApiKey {
  if (option !== undefined) {
    if (option.trim() === '') throw new CliError('--key is empty (did a shell variable expand to nothing?)', EXIT.USAGE);
    return { key: option.trim(), source: '--key' };
  }
  const env = process.env.TESSERA_API_KEY?.trim();
  if (env) return { key: env, source: 'TESSERA_API_KEY' };
  const file = path.resolve(KEY_FILE);
  if (existsSync(file)) {
    let saved: string;
    try {
      saved = readFileSync(file, 'utf8').trim();
    } catch (error) {
      throw new CliError(`cannot read the API key file ${file}: ${(error as NodeJS.ErrnoException).code ?? describeFsError(error)}`, EXIT.USAGE);
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

/** --timeout in milliseconds. */
export function timeoutMs(values: ConnectionOptions, command: string): number {
  if (values.timeout === undefined) return DEFAULT_TIMEOUT_SECONDS * 1000;
  const n = Number(values.timeout);
  if (values.timeout.trim() === '' || !Number.isFinite(n) || n <= 0 || n > 86_400) {
    throw usage(`--timeout must be a number of seconds, above 0 and at most 86400 (got "${values.timeout}")`, command);
  }
  return n * 1000;
}

/** A whole-number option from min to max, or `fallback` when it is not given. */
export function integer(value: string | undefined, name: string, fallback: number, min: number, max: number, command: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < min || n > max) throw usage(`--${name} must be a whole number from ${min} to ${max} (got "${value}")`, command);
  return n;
}

/** Exit 2 now, rather than after a request, when `file` cannot be read. */
export function readableFile(file: string): void {
  let stat;
  try {
    stat = statSync(file);
    accessSync(file, fsConstants.R_OK);
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${describeFsError(error)}`, EXIT.USAGE);
  }
  if (stat.isDirectory()) throw new CliError(`cannot read ${file}: it is a directory`, EXIT.USAGE);
}

/** Exit 2 now, rather than after the export, when `out` cannot be written. */
export function writableTarget(out: string): void {
  if (existsSync(out) && statSync(out).isDirectory()) throw new CliError(`cannot write ${out}: it is a directory`, EXIT.USAGE);
  const dir = path.dirname(path.resolve(out));
  try {
    accessSync(dir, fsConstants.W_OK);
  } catch (error) {
    throw new CliError(`cannot write ${out}: ${describeFsError(error)} (${dir})`, EXIT.USAGE);
  }
}
