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
import { activeTraceId, ATTR, inSpan, operationSpan, type Span } from './tracing';

/**
 * A refused key is answered no sooner than this after the check began, whatever the check found: an
 * unknown prefix costs a database look-up, a known prefix with a wrong secret a cached record —
 * measured here at 2.46 and 1.75 ms (medians of 60) — and the difference would tell a guesser that
 * a prefix exists. A timer, not work: it costs neither CPU nor a connection.
 */
export const AUTH_FAILURE_FLOOR_MS = 5;

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
  const note = (code: string, request: Pick<AdmitRequest, 'transport' | 'requestId' | 'address'>, status: number) => {
    metrics.graphqlErrors.inc({ code });
    operationSpan()?.setAttribute(ATTR.outcome, code);
    const traceId = activeTraceId();
    logger.info({ transport: request.transport, requestId: request.requestId, ...(traceId ? { traceId } : {}), address: request.address, status, errors: [code] }, 'graphql');
  };
  const refuse = (error: GraphQLError, request: AdmitRequest, status: number): never => {
    note(String(error.extensions.code), request, status);
    throw error;
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

  // Tracing on: the admission's span (the failed-authentication limit, then the key), the key's check its child.
  const admit = (request: AdmitRequest): Promise<OperationContext> => inSpan('tessera.admission', { [ATTR.transport]: request.transport }, (span) => admitIn(span, request));
  const authenticated = (request: AdmitRequest, started: number) =>
    inSpan('tessera.authenticate', undefined, async (span) => {
      const context = await createContext(db, services, live, request.authorization, { requestId: request.requestId, clientRequestId: request.clientRequestId, started });
      if (span) describeViewer(span, context);
      return context;
    });

  const admitIn = async (span: Span | undefined, request: AdmitRequest): Promise<OperationContext> => {
    const started = performance.now();
    const claim = keyClaim(request.authorization, services.keys.adminApiKey);
    let blockedFor = await rateLimits.authBlockedFor(request.address);
    // A failure reserved before a look-up (a key whose record, or absence, is not cached).
    const reserved = blockedFor === 0 && claim !== null && claim.kind !== 'admin' && !directory(claim.kind).isKeyCached(claim.prefix);
    if (reserved) blockedFor = await rateLimits.failedAuthentication(request.address);
    if (blockedFor > 0 && !(await stillChecked(claim, started))) {
      await floor(started);
      refuse(tooManyFailures(blockedFor), request, 429);
    }
    try {
      const context = await authenticated(request, started);
      if (reserved) void giveBack(request.address);
      if (span) describeViewer(operationSpan() ?? span, context);
      return context;
    } catch (error) {
      if (error instanceof GraphQLError && error.extensions.code === ErrorCode.UNAUTHENTICATED) {
        await floor(started);
        const over = blockedFor || (reserved ? 0 : await rateLimits.failedAuthentication(request.address));
        if (over > 0) refuse(tooManyFailures(over), request, 429);
        refuse(error, request, 401);
      }
      // The look-up itself failed (the database is down, or failing over): nothing was learnt about
      // the key, so the failure reserved for it is given back — an outage must not put every
      // caller over the failed-authentication limit (it answered RATE_LIMITED for 10 s after a
      // failover, and refused valid keys after the new primary was up).
      if (isTransientDbError(error)) {
        if (reserved) void giveBack(request.address);
        refuse(unavailable(), request, 503);
      }
      if (reserved) void giveBack(request.address);
      logger.error({ err: error, requestId: request.requestId }, 'authentication failed unexpectedly');
      throw refuse(new GraphQLError('Internal server error', { extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR, requestId: request.requestId } }), request, 500);
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
  span.setAttribute(ATTR.viewer, viewer.kind === 'partner' ? (viewer.test ? 'partner (test key)' : 'partner') : viewer.operator ? 'operator' : 'admin');
  if (viewer.kind === 'partner') span.setAttribute(ATTR.partnerId, viewer.partnerId);
  else if (viewer.operator) span.setAttribute(ATTR.operatorId, viewer.operator.id);
}
