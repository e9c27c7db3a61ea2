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
// - What a partner reads of a refusal (lastError) is ADDRESS_NOT_ALLOWED, the same text for a name
//   that resolves to a forbidden address, for a forbidden address literal, and for a name that does
//   not resolve at all (or whose look-up fails): otherwise the text would tell a partner which of
//   our internal names exist and where they point. Which name, which address and why goes to
//   `detail`, which the dispatcher logs for operators and never stores. Outside production no
//   address is refused, and a name that does not resolve says so.
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
  /** What the partner reads (WebhookDelivery.lastError); null when delivered. */
  error: string | null;
  /** Operators only (the log), set when an address was refused: which name, which address, why. */
  detail?: string;
  ms: number;
}

/** lastError of every refused address, whatever the name or the address (see the top). */
export const ADDRESS_NOT_ALLOWED = 'address not allowed';

const FORBIDDEN_ADDRESS = 'ERR_TESSERA_FORBIDDEN_ADDRESS';

/** An error of `lookup` that ends the attempt as ADDRESS_NOT_ALLOWED; its message is the detail. */
function refusal(detail: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(detail);
  error.code = FORBIDDEN_ADDRESS;
  return error;
}

/**
 * Resolves as dns.lookup does, but fails unless every address passes isForbiddenAddress. A failed
 * look-up fails as a refusal too: ENOTFOUND against a refused address would tell which names exist.
 */
function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(refusal(`${hostname} did not resolve (${error.code ?? error.message})`), '');
      if (addresses.length === 0) return callback(refusal(`${hostname} resolved to no address`), '');
      const forbidden = addresses.find((a) => isForbiddenAddress(a.address, { allowPrivate }));
      if (forbidden) return callback(refusal(`${hostname} resolves to ${forbidden.address}, a forbidden address`), '');
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Socket-level failures as a receiver's operator would name them (the DNS ones outside production only: guardedLookup). */
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
  if (code === FORBIDDEN_ADDRESS) return ADDRESS_NOT_ALLOWED;
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
  const result = (status: number | null, error: string | null, detail?: string): AttemptResult => ({
    ok: error === null,
    status,
    error,
    ...(detail === undefined ? {} : { detail }),
    ms: Math.round(performance.now() - started),
  });
  const checked = checkEndpointUrl(url, { production, allowPrivate });
  if (!checked.ok) {
    if (checked.address !== undefined) return Promise.resolve(result(null, ADDRESS_NOT_ALLOWED, checked.reason));
    return Promise.resolve(result(null, `url refused: ${checked.reason}`));
  }

  return new Promise((resolve) => {
    let request: http.ClientRequest | undefined;
    /** The status, once the answer's head has come: it decides, whatever happens to the body. */
    let answer: { status: number; error: string | null } | undefined;
    /** Ends the attempt (the first call counts); `error` says why when no answer has come, `detail` a refusal's. */
    const settle = (error = 'no answer', detail?: string) => {
      clearTimeout(deadline);
      request?.destroy();
      resolve(answer ? result(answer.status, answer.error) : result(null, error, detail));
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
    request.on('error', (error: NodeJS.ErrnoException) => settle(describe(error), error.code === FORBIDDEN_ADDRESS ? error.message : undefined));
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
