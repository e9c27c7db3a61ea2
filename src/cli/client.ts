// The GraphQL client of the CLI: one endpoint, one key. Every request has a deadline (connect, send
// and the whole answer); 429 and 503 answers are asked again after their Retry-After; every other
// failure becomes a CliError that says what happened in words.
//
// HTTP goes through node:http/https rather than fetch: fetch refuses the ports of the Fetch
// standard's "bad ports" list (e.g. 6000, 5060) and reports every network failure as "fetch failed".
import http from 'node:http';
import https from 'node:https';
import timers from 'node:timers';
import { CliError } from './errors';
import type { ApiKey } from './options';

const RETRY_ATTEMPTS = 6; // for 429 / 503 answers, waiting Retry-After between attempts
const MAX_RETRY_AFTER_SECONDS = 30; // a longer wait is reported instead of slept through

const NETWORK_ERRORS: Record<string, string> = {
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

const TIMEOUT = 'TESSERA_TIMEOUT';

export interface Client {
  /** The data of one GraphQL operation; `cancelled` stops retries of a busy server's answers. */
  request<T = Record<string, unknown>>(query: string, variables: Record<string, unknown>, options?: { cancelled?: () => boolean }): Promise<T>;
  /** Destroys the connections kept alive. */
  close(): void;
  /** The endpoint, for messages: never a password from the URL. */
  where: string;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

interface GraphQLError {
  message?: unknown;
  extensions?: { code?: string };
}

type RequestError = NodeJS.ErrnoException & { reusedSocket?: boolean };

export function createClient(endpoint: URL, { key, source }: ApiKey, timeoutMs: number): Client {
  const transport = endpoint.protocol === 'https:' ? https : http;
  const agent = new transport.Agent({ keepAlive: true });
  const shown = new URL(endpoint.href);
  shown.username = '';
  shown.password = '';
  const where = shown.href;

  function post(body: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (error: RequestError | null, value?: Answer) => {
        if (settled) return;
        settled = true;
        timers.clearTimeout(timer);
        if (error) reject(error);
        else resolve(value!);
      };
      const req = transport.request(endpoint, {
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
        const error: RequestError = Object.assign(new Error(`no answer within ${timeoutMs / 1000} s`), { code: TIMEOUT });
        req.destroy(error);
        finish(error);
      }, timeoutMs);
      req.on('error', (error: RequestError) => finish(Object.assign(error, { reusedSocket: req.reusedSocket })));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', (error) => finish(error));
        res.on('end', () => finish(null, { status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('close', () => {
          if (!res.complete) finish(Object.assign(new Error('the answer was cut off'), { code: 'ECONNRESET' }));
        });
      });
      req.end(body);
    });
  }

  async function request<T>(query: string, variables: Record<string, unknown>, { cancelled }: { cancelled?: () => boolean } = {}): Promise<T> {
    const body = JSON.stringify({ query, variables });
    for (let attempt = 1; ; attempt += 1) {
      let res: Answer;
      try {
        res = await post(body);
      } catch (caught) {
        const error = caught as RequestError;
        // A kept-alive connection the server had just closed: the request never arrived; again.
        if (error.reusedSocket && error.code === 'ECONNRESET' && attempt === 1) continue;
        if (error.code === TIMEOUT) throw new CliError(`no answer from ${where} within ${timeoutMs / 1000} s (--timeout)`);
        const reason = (error.code !== undefined ? NETWORK_ERRORS[error.code] : undefined) ?? error.message ?? String(error);
        throw new CliError(`could not reach ${where}: ${reason}`);
      }
      let payload: { data?: T | null; errors?: GraphQLError[] } | null = null;
      try {
        payload = JSON.parse(res.text);
      } catch {
        /* not JSON: reported below */
      }
      if ((res.status === 429 || res.status === 503) && attempt < RETRY_ATTEMPTS && !cancelled?.()) {
        const wait = Number(res.headers['retry-after'] ?? 1);
        if (Number.isFinite(wait) && wait >= 0 && wait <= MAX_RETRY_AFTER_SECONDS) {
          await new Promise((resolve) => timers.setTimeout(resolve, Math.max(wait, 0.1) * 1000));
          continue;
        }
      }
      if (!payload || typeof payload !== 'object' || !('data' in payload || 'errors' in payload)) throw notGraphQL(res, where);
      const first = payload.errors?.[0];
      if (first) throw graphqlError(first, res, source, where);
      if (!payload.data) throw new CliError(`${where} answered HTTP ${res.status} without data`);
      return payload.data;
    }
  }

  return { request, close: () => agent.destroy(), where };
}

function notGraphQL(res: Answer, where: string): CliError {
  const type = String(res.headers['content-type'] ?? 'no content type').split(';')[0];
  const hint =
    res.status >= 300 && res.status < 400 && res.headers.location
      ? `: it redirects to ${res.headers.location}; use that URL`
      : res.status < 300 || res.status === 404 || res.status === 405
        ? ': is the URL a Tessera server?'
        : '';
  return new CliError(`${where} answered HTTP ${res.status} (${type}) instead of GraphQL${hint}`);
}

function graphqlError(error: GraphQLError, res: Answer, keySource: string, where: string): CliError {
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
