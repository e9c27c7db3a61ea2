// Who gets in, for every transport: the caller's key is checked once per operation (HTTP: each
// request; WebSocket: each subscribe message, and the socket's key again while it stays open),
// behind the failed-authentication limit of the caller's address (clientAddress.ts).
//
// Failures are counted per address, and a key that costs a database look-up is counted before the
// look-up (given back when it proves valid): a burst of guesses from one address costs about as many
// look-ups as the limit allows, however many arrive at once. Over the limit, failures from others
// at that address never lock out a valid key: the admin key (checked in memory) and a well-formed key
// whose prefix is known to exist (keyCache.ts: from memory, no look-up) are still checked, and a
// valid one is admitted. Everything else — an unknown prefix, a wrong secret, a revoked or malformed
// key, none — gets one and the same 429, no sooner than the failure floor: the limit says nothing
// about a secret, and unknown prefixes cost the database nothing.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { GraphQLError } from 'graphql';
import { authenticate, keyClaim, type Authenticator, type KeyClaim } from './auth';
import { createClientAddress, type ClientAddress } from './clientAddress';
import { createContext, type OperationContext, type Services } from './context';
import type { Database } from './db/client';
import { isTransientDbError } from './db/pgErrors';
import { ErrorCode, rateLimited, unavailable } from './errors';
import type { LiveUpdates } from './live';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import type { RateLimits } from './rateLimit';
import { ATTR, childSpan, failed, traceIdOf, type Span } from './tracing';

/**
 * A refused key is answered no sooner than this after the check began, whatever the check found: an
 * unknown prefix costs a database look-up, a known prefix with a wrong secret a cached record —
 * measured here at 2.46 and 1.75 ms (medians of 60) — and the difference would tell a guesser that
 * a prefix exists. A timer, not work: it costs neither CPU nor a connection.
 */
export const AUTH_FAILURE_FLOOR_MS = 5;

/** Tracing on: an admission that took this long or more is a span of its own (below, admit). */
export const ADMISSION_SPAN_MS = 1;

/** A client's x-request-id is kept (beside ours) only when it looks like an id. */
export const wellFormedRequestId = (header: string | undefined): string | undefined =>
  header && /^[\w.:-]{1,100}$/.test(header) ? header : undefined;

/** One operation's caller, as a transport saw it. */
export interface AdmitRequest {
  authorization: string | undefined;
  /** The client's address (clientAddress.ts): the key of the failed-authentication limit. */
  address: string;
  requestId: string;
  clientRequestId?: string;
  transport: 'http' | 'ws';
  /** The operation's span (tracing on): admission's goes under it, and the context carries it. */
  trace?: Span;
}

export interface Admit {
  /** The operation's context; throws the GraphQLError to answer (401, 429, 503, 500). */
  (request: AdmitRequest): Promise<OperationContext>;
  /**
   * An open socket's key checked again, against a record read after this call began (not one up to
   * a TTL old), outside the failed-authentication limit — the key was admitted when the socket
   * opened, so this is no guess. False when it no longer authenticates.
   */
  recheck(socket: { authorization: string | undefined; address: string }): Promise<boolean>;
  /** The client address of an HTTP request or a WebSocket's upgrade request (TRUST_PROXY). */
  clientAddress: ClientAddress;
}

export function createAdmission(options: {
  db: Database;
  services: Services;
  live: LiveUpdates;
  rateLimits: RateLimits;
  metrics: Metrics;
  logger: Logger;
  /** Left out: the socket's remote address, whatever the headers say. */
  clientAddress?: ClientAddress;
}): Admit {
  const { db, services, live, rateLimits, metrics, logger } = options;
  const note = (code: string, request: Pick<AdmitRequest, 'transport' | 'requestId' | 'address' | 'trace'>, status: number) => {
    metrics.graphqlErrors.inc({ code });
    request.trace?.setAttribute(ATTR.outcome, code);
    const traceId = traceIdOf(request.trace);
    logger.info({ transport: request.transport, requestId: request.requestId, ...(traceId ? { traceId } : {}), address: request.address, status, errors: [code] }, 'graphql');
  };
  const refuse = (error: GraphQLError, request: AdmitRequest, status: number, started?: number): never => {
    note(String(error.extensions.code), request, status);
    if (request.trace && started !== undefined) spanned(request, started, error);
    throw error;
  };
  // Tracing on: the admission (the failed-authentication limit, then the key's check) is a span under
  // the operation's when it looked the key up in the database, refused, or took ADMISSION_SPAN_MS or
  // more (a limiter in Redis); made once it is over, with its real start. A key from the cache takes
  // microseconds: a span would cost more than it shows.
  const spanned = (request: AdmitRequest, started: number, error?: GraphQLError) => {
    const span = childSpan(request.trace, 'tessera.admission', { [ATTR.transport]: request.transport }, { startTime: started })!;
    if (error !== undefined) failed(span, error);
    span.end();
  };
  const tooManyFailures = (retryAfterSeconds: number) => rateLimited(retryAfterSeconds, 'Too many failed authentications from this address; retry later.');
  const directory = (kind: 'partner' | 'operator') => (kind === 'partner' ? services.partners : services.operatorKeys);
  // Timers count whole milliseconds from the event loop's clock, which may run a little behind: a
  // timer can fire up to a millisecond early, so the floor is waited out until it has passed.
  const floor = async (started: number) => {
    for (let early = AUTH_FAILURE_FLOOR_MS - (performance.now() - started); early > 0; early = AUTH_FAILURE_FLOOR_MS - (performance.now() - started)) {
      await sleep(Math.ceil(early));
    }
  };
  /** Over the limit, only these keys are checked: the admin key, and a key whose prefix is known to exist. */
  const stillChecked = async (claim: KeyClaim, started: number) =>
    claim !== null && (claim.kind === 'admin' || (await directory(claim.kind).keyExists(claim.prefix, started + AUTH_FAILURE_FLOOR_MS)));
  const giveBack = (address: string) => rateLimits.refundFailedAuthentication(address).catch((error: unknown) => logger.warn({ error: (error as Error).message }, 'failed-authentication refund failed'));

  const admit = async (request: AdmitRequest): Promise<OperationContext> => {
    const started = performance.now();
    const claim = keyClaim(request.authorization, services.keys.adminApiKey);
    // Tracing on: a key whose record is not cached is looked up — admission is then a span of its own.
    const lookedUp = request.trace !== undefined && claim !== null && claim.kind !== 'admin' && !directory(claim.kind).isKeyCached(claim.prefix);
    let blockedFor = await rateLimits.authBlockedFor(request.address);
    // A failure reserved before a look-up (a key whose record, or absence, is not cached).
    const reserved = blockedFor === 0 && claim !== null && claim.kind !== 'admin' && !directory(claim.kind).isKeyCached(claim.prefix);
    if (reserved) blockedFor = await rateLimits.failedAuthentication(request.address);
    if (blockedFor > 0 && !(await stillChecked(claim, started))) {
      await floor(started);
      refuse(tooManyFailures(blockedFor), request, 429, started);
    }
    try {
      const context = await createContext(db, services, live, request.authorization, {
        requestId: request.requestId,
        clientRequestId: request.clientRequestId,
        started,
        trace: request.trace,
      });
      if (reserved) void giveBack(request.address);
      if (request.trace) {
        describeViewer(request.trace, context);
        if (lookedUp || performance.now() - started >= ADMISSION_SPAN_MS) spanned(request, started);
      }
      return context;
    } catch (error) {
      if (error instanceof GraphQLError && error.extensions.code === ErrorCode.UNAUTHENTICATED) {
        await floor(started);
        const over = blockedFor || (reserved ? 0 : await rateLimits.failedAuthentication(request.address));
        if (over > 0) refuse(tooManyFailures(over), request, 429, started);
        refuse(error, request, 401, started);
      }
      // The look-up itself failed (the database is down, or failing over): nothing was learnt about
      // the key, so the failure reserved for it is given back — an outage must not put every
      // caller over the failed-authentication limit, and a failover must not leave valid keys
      // refused (RATE_LIMITED) once the new primary is up.
      if (isTransientDbError(error)) {
        if (reserved) void giveBack(request.address);
        refuse(unavailable(), request, 503, started);
      }
      if (reserved) void giveBack(request.address);
      logger.error({ err: error, requestId: request.requestId }, 'authentication failed unexpectedly');
      throw refuse(new GraphQLError('Internal server error', { extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR, requestId: request.requestId } }), request, 500, started);
    }
  };

  const recheck: Admit['recheck'] = async (socket) => {
    // The instant the record must be read after. The sweep (ws.ts) rechecks every open socket in one
    // synchronous loop: yielding once lets every call of the loop take its instant first, so the
    // sockets of one key share one look-up, which begins after all of them.
    const since = performance.now();
    await Promise.resolve();
    const fresh: Authenticator = {
      adminApiKey: services.keys.adminApiKey,
      findPartnerByPrefix: (prefix) => services.partners.findPartnerByPrefix(prefix, since),
      findOperatorByPrefix: (prefix) => services.operatorKeys.findOperatorByPrefix(prefix, since),
    };
    try {
      const viewer = await authenticate(socket.authorization, fresh);
      if (viewer.kind === 'partner') services.partners.touch(viewer);
      else if (viewer.operator) services.operatorKeys.touch(viewer.operator.id);
      return true;
    } catch (error) {
      if (!(error instanceof GraphQLError && error.extensions.code === ErrorCode.UNAUTHENTICATED)) throw error;
      note(ErrorCode.UNAUTHENTICATED, { transport: 'ws', requestId: randomUUID(), address: socket.address }, 401);
      return false;
    }
  };

  return Object.assign(admit, { recheck, clientAddress: options.clientAddress ?? createClientAddress() });
}

/** Who is calling, on a span: the kind of key and its owner's id — never the key, nor any part of it. */
function describeViewer(span: Span, context: OperationContext): void {
  const viewer = context.viewer;
  // A partner's id says the kind (its test key's use is marked): one attribute fewer on most spans.
  if (viewer.kind === 'partner') {
    span.setAttribute(ATTR.partnerId, viewer.partnerId);
    if (viewer.test) span.setAttribute(ATTR.viewer, 'partner (test key)');
  } else if (viewer.operator) {
    span.setAttribute(ATTR.viewer, 'operator');
    span.setAttribute(ATTR.operatorId, viewer.operator.id);
  } else span.setAttribute(ATTR.viewer, 'admin');
}
