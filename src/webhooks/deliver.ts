// One delivery attempt: a signed POST, judged by its status alone. The outcome is a value — status
// and a short, stable error text for WebhookDelivery.lastStatusCode/lastError — never a throw.
//
// - One connection per attempt (agent: false): nothing outlives the attempt, and no pooled socket
//   checked for one URL carries the request of another.
// - Redirects are not followed: a 3xx is a failure with its status (a redirect could lead past the
//   address check, and the partner should register the URL that answers).
// - One deadline, timeoutMs (10 s by the contract), covers DNS, connect, TLS and the answer. A 2xx
//   status within it is a delivery; the body is read (at most MAX_RESPONSE_BYTES) only so the
//   receiver can finish writing, then dropped.
// - Production checks every address a host name resolves to (urlPolicy.ts) inside the socket's own
//   `lookup`, so the connection goes to an address that was checked: no second resolution for DNS
//   rebinding to exploit, and the check runs before any TLS byte is sent. Address literals skip
//   `lookup` in Node; checkEndpointUrl refuses the forbidden ones first.
import { lookup as dnsLookup } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { checkEndpointUrl, isForbiddenAddress } from './urlPolicy';
import { signatureHeader } from './signature';

export const DELIVERY_TIMEOUT_MS = 10_000;
/** Enough for any acknowledgement; a larger answer is cut off, its status still counts. */
export const MAX_RESPONSE_BYTES = 64 * 1024;
export const USER_AGENT = 'Tessera-Webhooks/1';

export interface DeliveryAttempt {
  url: string;
  /** The JSON text {id, type, createdAt, data}, sent and signed byte for byte. */
  body: string;
  /** The body's id, repeated in Tessera-Event-Id for receivers that de-duplicate before parsing. */
  eventId: string;
  /** The endpoint's secret in clear (openSecret). */
  secret: string;
  timeoutMs?: number;
  production: boolean;
  allowPrivate?: boolean;
  /** The signature's timestamp. */
  now?: Date;
  /** More headers: the delivery's traceparent when tracing is on. */
  headers?: Record<string, string>;
}

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: string | null;
  ms: number;
}

const FORBIDDEN_ADDRESS = 'ERR_TESSERA_FORBIDDEN_ADDRESS';

/** Resolves as dns.lookup does, but fails unless every address passes isForbiddenAddress. */
function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const forbidden = addresses.find((a) => isForbiddenAddress(a.address, { allowPrivate }));
      if (forbidden || addresses.length === 0) {
        const refusal: NodeJS.ErrnoException = new Error(`forbidden address ${forbidden?.address ?? `(none for ${hostname})`}`);
        refusal.code = FORBIDDEN_ADDRESS;
        return callback(refusal, '');
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Socket-level failures as a receiver's operator would name them. */
const ERROR_TEXT: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  ETIMEDOUT: 'connect timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};
const TLS_ERROR = /^(EPROTO$|ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_)/;

function describe(error: NodeJS.ErrnoException): string {
  const code = error.code ?? '';
  if (code === FORBIDDEN_ADDRESS) return error.message;
  if (ERROR_TEXT[code]) return ERROR_TEXT[code];
  if (TLS_ERROR.test(code)) return `TLS error (${code})`;
  if (code.startsWith('HPE_')) return `invalid HTTP response (${code})`;
  return code ? `request failed (${code})` : 'request failed';
}

function statusError(status: number): string | null {
  if (status >= 200 && status < 300) return null;
  if (status >= 300 && status < 400) return `redirect (${status}) not followed`;
  return `HTTP ${status}`;
}

export function deliverOnce(attempt: DeliveryAttempt): Promise<AttemptResult> {
  const { url, body, eventId, secret, timeoutMs = DELIVERY_TIMEOUT_MS, production, allowPrivate = false, now = new Date() } = attempt;
  const started = performance.now();
  const result = (status: number | null, error: string | null): AttemptResult => ({
    ok: error === null,
    status,
    error,
    ms: Math.round(performance.now() - started),
  });
  const checked = checkEndpointUrl(url, { production, allowPrivate });
  if (!checked.ok) return Promise.resolve(result(null, `url refused: ${checked.reason}`));

  return new Promise((resolve) => {
    let request: http.ClientRequest | undefined;
    /** The status, once the answer's head has come: it decides, whatever happens to the body. */
    let answer: { status: number; error: string | null } | undefined;
    /** Ends the attempt (the first call counts); `error` says why when no answer has come. */
    const settle = (error = 'no answer') => {
      clearTimeout(deadline);
      request?.destroy();
      resolve(answer ? result(answer.status, answer.error) : result(null, error));
    };
    const deadline = setTimeout(() => settle(`timeout after ${timeoutMs} ms`), timeoutMs);
    const transport = checked.url.protocol === 'https:' ? https : http;
    try {
      request = transport.request(checked.url, {
        method: 'POST',
        agent: false,
        lookup: production ? guardedLookup(allowPrivate) : undefined,
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(body),
          'User-Agent': USER_AGENT,
          'Tessera-Event-Id': eventId,
          'Tessera-Signature': signatureHeader(secret, body, now),
          ...attempt.headers,
        },
      });
    } catch (error) {
      // Only a header value Node refuses (a control character in eventId) throws here.
      return settle(`invalid request (${(error as NodeJS.ErrnoException).code ?? 'unknown'})`);
    }
    request.on('error', (error) => settle(describe(error)));
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      answer = { status, error: statusError(status) };
      let received = 0;
      response.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > MAX_RESPONSE_BYTES) settle();
      });
      // 'close' follows the end of the body and a body cut off alike; the status already decided.
      response.on('close', () => settle());
      response.on('error', () => settle());
    });
    request.end(body);
  });
}
