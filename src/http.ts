// /graphql over HTTP: a node:http handler around Apollo's executeHTTPGraphQLRequest — the way
// Apollo Server documents building an integration — with CORS, load shedding, the operation's
// context (who is calling: admission.ts), decided from the headers before any of the body is read,
// and the JSON body, bounded by who sent it (HttpLimits); body failures answer in GraphQL's shape.
//
// Why not Express for the API: Express 5's router, body-parser and res.send cost more per request
// than Apollo's whole pipeline for an empty query. A minimal Apollo Server answers about twice as
// many `{ __typename }` per second behind a bare node:http handler as behind Express 5 with
// @as-integrations/express5 (measured side by side on one machine), so Tessera's API takes the bare
// handler. Express serves every other route (server.ts), and the rare /graphql requests that are not
// a plain POST /graphql (GET queries, CORS preflights, HEAD, /GRAPHQL…) reach this same handler
// through it.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HeaderMap, type ApolloServer, type BaseContext, type HTTPGraphQLResponse } from '@apollo/server';
import cors from 'cors';
import express from 'express';
import { wellFormedRequestId, type Admit } from './admission';
import type { OperationContext } from './context';
import type { HttpLimits } from './config';
import type { Database } from './db/client';
import { ErrorCode, RETRY_AFTER_SECONDS } from './errors';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { ATTR, CLIENT_GONE, operationSpan, outcomeDecided, SpanStatusCode, tracingOn, type Span } from './tracing';

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** POST /graphql exactly (with or without a query string): what the handler serves without Express. */
export const isGraphQLPost = (req: IncomingMessage): boolean =>
  req.method === 'POST' && (req.url === '/graphql' || req.url?.startsWith('/graphql?') === true);

/** What a failed read of a body looks like (body-parser's errors have the same fields). */
interface BodyError {
  status?: number;
  type?: string;
  /** The limit a body went past, in bytes. */
  limit?: number;
}

/** A byte count as a person reads it: 262144 → "256 KiB", 5242880 → "5 MiB". */
const bytesText = (bytes: number): string =>
  bytes % 1_048_576 === 0 ? `${bytes / 1_048_576} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;

/** A JSON answer in GraphQL's shape, as Express's res.json would write it. */
function answerJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  if (headers) for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}

/** Body failures (too large, not JSON, an unsupported charset or encoding), and anything unexpected, in GraphQL's shape. */
export function answerHttpError(res: ServerResponse, error: BodyError, logger: Pick<Logger, 'error'>): void {
  const status = error.status && error.status >= 400 && error.status < 500 ? error.status : 500;
  const tooLarge = error.type === 'entity.too.large';
  if (status === 500) logger.error({ err: error }, 'unhandled HTTP error');
  answerJson(res, status, {
    errors: [
      {
        message: tooLarge ? `The request body is larger than the ${bytesText(error.limit ?? 0)} this key may send.` : status === 500 ? 'Internal server error' : 'The request body is not valid JSON.',
        extensions: { code: tooLarge ? 'PAYLOAD_TOO_LARGE' : status === 500 ? ErrorCode.INTERNAL_SERVER_ERROR : 'BAD_REQUEST' },
      },
    ],
  });
}

/** Express's error handler for every other route: the same answers (server.ts). */
export function httpErrorHandler(logger: Logger): express.ErrorRequestHandler {
  return (error: BodyError, _req, res, next) => {
    if (res.headersSent) return next(error);
    answerHttpError(res, error, logger);
  };
}

/** `application/json`, in UTF-8 (the charset JSON is sent in), without a content encoding: read here. */
const PLAIN_JSON = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;
const JSON_WHITESPACE = /^[ \t\n\r]*/;

/**
 * Reads a plain JSON body (PLAIN_JSON, with a length or chunked) as body-parser's `json()` reads it:
 * at most `limit` bytes (413 `entity.too.large`, the rest of the body read off first), UTF-8 with a
 * byte order mark dropped, an empty body as `{}`, only an object or an array at the top (400
 * otherwise). Anything else — another charset, a content encoding — goes to body-parser itself.
 * (Its callbacks are anonymous on purpose: tsx names every named closure with Object.defineProperty,
 * once per request here.)
 */
function readPlainJson(req: IncomingMessage, limit: number, done: (error: BodyError | null, body?: unknown) => void): void {
  const declared = req.headers['content-length'];
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = declared !== undefined && Number(declared) > limit;
  let finished = false;
  req.on('data', (chunk: Buffer) => {
    if (tooLarge) return;
    size += chunk.length;
    if (size > limit) {
      tooLarge = true;
      chunks.length = 0;
    } else chunks.push(chunk);
  });
  req.on('end', () => {
    if (finished) return;
    finished = true;
    if (tooLarge) done({ status: 413, type: 'entity.too.large', limit });
    else parseJson(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8'), done);
  });
  // A client gone before the end of its body: nobody reads the answer.
  req.on('error', () => {
    if (finished) return;
    finished = true;
    done({ status: 400, type: 'request.aborted' });
  });
}

function parseJson(text: string, done: (error: BodyError | null, body?: unknown) => void): void {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return done(null, {});
  const first = text[0] === '{' || text[0] === '[' ? text[0] : text[JSON_WHITESPACE.exec(text)![0].length];
  if (first !== '{' && first !== '[') return done({ status: 400, type: 'entity.parse.failed' });
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return done({ status: 400, type: 'entity.parse.failed' });
  }
  done(null, body);
}

/** An error after the body was read: answered as a 500 if nothing was sent yet, else the connection is cut. */
function answerFailure(res: ServerResponse, error: unknown, logger: Pick<Logger, 'error'>): void {
  if (res.headersSent) {
    logger.error({ err: error }, 'failed while answering a GraphQL request');
    res.destroy();
  } else answerHttpError(res, error as BodyError, logger);
}

/** Apollo's copy of the request's headers (as @as-integrations/express5 makes it). */
function headerMap(req: IncomingMessage): HeaderMap {
  const headers = new HeaderMap();
  const incoming = req.headers;
  for (const name in incoming) {
    const value = incoming[name];
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

async function send(req: IncomingMessage, res: ServerResponse, response: HTTPGraphQLResponse): Promise<void> {
  res.statusCode = response.status ?? 200;
  for (const [name, value] of response.headers) res.setHeader(name, value);
  // No cache stores a GraphQL answer. (Apollo's cache-control plugin would say so for every answer
  // of this schema, which has no cache hints; it is off — server.ts — as it wraps every resolver.)
  if (!response.headers.has('cache-control')) res.setHeader('cache-control', 'no-store');
  if (response.body.kind === 'complete') {
    // node:http sets the length of a body it writes; a HEAD answer has none, but says how long it would be.
    if (req.method === 'HEAD') res.setHeader('content-length', Buffer.byteLength(response.body.string));
    res.end(response.body.string);
    return;
  }
  for await (const chunk of response.body.asyncIterator) res.write(chunk);
  res.end();
}

/** Reads a JSON body of at most `limit` bytes: plain UTF-8 JSON here, anything else through body-parser. */
function bodyReader(): (req: IncomingMessage, res: ServerResponse, limit: number, done: (error: BodyError | null, body?: unknown) => void) => void {
  // Bodies that are not plain UTF-8 JSON (another charset, gzip…): body-parser itself, one parser per limit.
  const otherBodies = new Map<number, express.RequestHandler>();
  return (req, res, limit, done) => {
    const headers = req.headers;
    const encoding = headers['content-encoding'];
    const plain =
      PLAIN_JSON.test(headers['content-type'] ?? '') &&
      (encoding === undefined || encoding.toLowerCase() === 'identity') &&
      (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined);
    if (plain) return readPlainJson(req, limit, done);
    let parser = otherBodies.get(limit);
    if (parser === undefined) otherBodies.set(limit, (parser = express.json({ limit })));
    void parser(req as express.Request, res as express.Response, (error?: unknown) => {
      if (error) done(error as BodyError); // body-parser's error for a body too large carries its limit
      else done(null, (req as { body?: unknown }).body);
    });
  };
}

/**
 * A request answered before its body was read (a refused key, load shed): the body is let through
 * and dropped, never kept, so that a client still sending it reads the answer — a connection closed
 * under data its peer has not read is reset, and the client loses the answer with it. At most
 * `limit` bytes (the largest body any key may send): a body declared larger closes the connection
 * with the answer, one sent larger is cut off there.
 */
function dropBody(req: IncomingMessage, res: ServerResponse, limit: number): void {
  if (Number(req.headers['content-length'] ?? 0) > limit) {
    res.setHeader('connection', 'close');
    return;
  }
  let left = limit;
  req.on('data', (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) req.socket.destroy();
  });
}

/**
 * Apollo Server behind a plain node:http listener — the HTTP integration Tessera serves /graphql
 * with. Who is calling comes first, from the request's headers alone (`context`); only then is the
 * body read, at most `bodyLimit(context)` bytes (read as body-parser's `json()` reads it; body
 * failures answered in GraphQL's shape). A refused caller gets Apollo's answer for the refusal at
 * once, its body never read into memory (dropBody, up to `dropLimit` bytes). Then Apollo's
 * executeHTTPGraphQLRequest runs with that context, and its answer goes out (always
 * `cache-control: no-store`). Nothing of Tessera's own: graphqlHandler adds that. A minimal Apollo
 * served with it is the like-for-like baseline of Tessera's ceiling.
 */
export function apolloListener<TContext extends BaseContext>(
  apollo: ApolloServer<TContext>,
  options: {
    context(req: IncomingMessage, res: ServerResponse): Promise<TContext>;
    bodyLimit(context: TContext): number;
    /** The most of a refused request's body let through and dropped (dropBody). */
    dropLimit: number;
    logger: Pick<Logger, 'error'>;
  },
): RequestListener {
  const { logger } = options;
  const readBody = bodyReader();

  const execute = async (req: IncomingMessage, res: ServerResponse, body: unknown, context: Promise<TContext>): Promise<void> => {
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const response = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: req.method ?? 'GET', headers: headerMap(req), search: query < 0 ? '' : url.slice(query), body },
      context() {
        return context;
      },
    });
    await send(req, res, response);
  };

  return (req, res) => {
    const context = options.context(req, res);
    context.then(
      (value) =>
        readBody(req, res, options.bodyLimit(value), (error, body) => {
          if (error) answerHttpError(res, error, logger);
          else execute(req, res, body, context).catch((error: unknown) => answerFailure(res, error, logger));
        }),
      () => {
        // Refused from its headers: answered at once, the body dropped unread.
        dropBody(req, res, options.dropLimit);
        execute(req, res, undefined, context).catch((error: unknown) => answerFailure(res, error, logger));
      },
    );
  };
}

/**
 * The /graphql handler: CORS (the allow-listed origins, CORS_ORIGINS; none by default — Apollo's
 * CSRF prevention stays on whatever this allows), load shedding before the body is read, then
 * Apollo (apolloListener) with the operation's context: its request id (the x-request-id header)
 * and who is calling (admission.ts). server.ts hands it POST /graphql directly, and Express the
 * rest of /graphql.
 */
export function graphqlHandler(
  apollo: ApolloServer<OperationContext>,
  options: { db: Database; admit: Admit; logger: Logger; metrics: Metrics; corsOrigins: readonly string[]; limits: HttpLimits },
): RequestListener {
  const { db, admit, logger, metrics } = options;
  const { maxBodyBytes } = options.limits;
  const corsOrigins = options.corsOrigins;
  const anyOrigin = corsOrigins.includes('*');
  const allowedOrigins = new Set(corsOrigins);
  const preflight = cors({ origin: anyOrigin ? true : [...corsOrigins], maxAge: 600 });
  const SHED = { errors: [{ message: 'Too many requests are waiting for the database; retry shortly.', extensions: { code: ErrorCode.UNAVAILABLE, retryable: true } }] };

  const graphql = apolloListener(apollo, {
    logger,
    context(req, res) {
      const requestId = randomUUID();
      res.setHeader('x-request-id', requestId);
      const clientRequestId = wellFormedRequestId(req.headers['x-request-id'] as string | undefined);
      const trace = operationSpanOf(req);
      if (trace) {
        trace.setAttribute(ATTR.requestId, requestId);
        if (clientRequestId) trace.setAttribute(ATTR.clientRequestId, clientRequestId);
      }
      return admit({ authorization: req.headers.authorization, address: admit.clientAddress(req), requestId, clientRequestId, transport: 'http', trace });
    },
    bodyLimit: (context) => (context.viewer.kind === 'partner' ? maxBodyBytes.partner : maxBodyBytes.operator),
    dropLimit: maxBodyBytes.operator,
  });

  const serve = (req: IncomingMessage, res: ServerResponse): void => {
    // Load shedding: when the pool's queue is already full, answer at once rather than queue a
    // request that would only time out. Nothing has touched the database, so a retry is always safe.
    // The body is dropped unread (dropBody).
    if (req.method === 'POST' && db.saturated()) {
      metrics.shed.inc();
      operationSpanOf(req)?.setAttribute(ATTR.outcome, ErrorCode.UNAVAILABLE);
      dropBody(req, res, maxBodyBytes.operator);
      answerJson(res, 503, SHED, { 'retry-after': String(RETRY_AFTER_SECONDS) });
      return;
    }
    graphql(req, res);
  };

  return (req, res) => {
    // Preflights (OPTIONS) are the cors package's. Other requests get what it would write for these
    // options — `Vary: Origin`, and the origin echoed when it is allowed — without its per-request
    // copy of the options (test/security.test.ts checks both against the allow-list).
    if (req.method === 'OPTIONS') return preflight(req, res, () => serve(req, res));
    res.setHeader('Vary', 'Origin');
    const origin = req.headers.origin;
    if (origin && (anyOrigin || allowedOrigins.has(origin))) res.setHeader('Access-Control-Allow-Origin', origin);
    if (tracingOn()) traced(req, res, serve);
    else serve(req, res);
  };
}

/** Where a traced request keeps its SERVER span, from its arrival (traced) to its context (graphqlHandler): a property, not a WeakMap entry per request for the collector to sweep. */
const OPERATION_SPAN = Symbol('tessera.operationSpan');
const operationSpanOf = (req: IncomingMessage): Span | undefined => (req as IncomingMessage & { [OPERATION_SPAN]?: Span })[OPERATION_SPAN];

/** The SERVER span's first name and attributes, by method: one string and one object for every request (POST, mostly). */
const OPERATION_START = new Map(['GET', 'POST'].map((method) => [method, { name: `${method} /graphql`, attributes: Object.freeze({ 'http.request.method': method }) }]));

/**
 * Tracing on: the request's SERVER span, continuing the caller's trace from its traceparent header,
 * kept for the request's context (every span of its work goes under it) and ended with the answer.
 * The GraphQL plugin names it after the operation (`mutation ClaimTicket`) once it is known.
 */
function traced(req: IncomingMessage, res: ServerResponse, serve: RequestListener): void {
  const method = req.method ?? 'GET';
  const start = OPERATION_START.get(method) ?? { name: `${method} /graphql`, attributes: { 'http.request.method': method } };
  (req as IncomingMessage & { [OPERATION_SPAN]?: Span })[OPERATION_SPAN] = operationSpan(start.name, req.headers, start.attributes)!;
  res.on('close', endOperationSpan);
  serve(req, res);
}

/**
 * The response's 'close' (answered, or the client gone): its request's span ends. One function for
 * every response, no closure per request. A client that left before its answer was written is
 * said so (`tessera.client.gone`), and the operation's outcome is CLIENT_GONE unless it was decided
 * already — the work may go on (a claim in a group statement commits), but its span ends here.
 */
function endOperationSpan(this: ServerResponse): void {
  const span = operationSpanOf(this.req);
  if (span === undefined) return;
  if (!this.writableFinished) {
    span.setAttribute(ATTR.clientGone, true);
    if (!outcomeDecided(span)) span.setAttribute(ATTR.outcome, CLIENT_GONE);
    span.end();
    return;
  }
  span.setAttribute('http.response.status_code', this.statusCode);
  if (this.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${this.statusCode}` });
  span.end();
}
