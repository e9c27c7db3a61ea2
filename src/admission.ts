// Who gets in, for every transport: the caller's key is checked once per operation (HTTP: each
// request; WebSocket: each subscribe message, and the socket's key again while it stays open),
// behind the failed-authentication limit of the caller's address. Over that limit, every request
// from the address gets the same 429 before its key is looked at — a right key as much as a wrong
// one — so the limit is no oracle, and refused guesses cost the database nothing.
import { setTimeout as sleep } from 'node:timers/promises';
import { GraphQLError } from 'graphql';
import { createContext, type OperationContext, type Services } from './context';
import type { Database } from './db/client';
import { isTransientDbError } from './db/pgErrors';
import { ErrorCode, rateLimited, unavailable } from './errors';
import type { LiveUpdates } from './live';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import type { RateLimits } from './rateLimit';

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

export type Admit = (request: { authorization: string | undefined; address: string; requestId: string; clientRequestId?: string; transport: 'http' | 'ws' }) => Promise<OperationContext>;

export function createAdmission(options: { db: Database; services: Services; live: LiveUpdates; rateLimits: RateLimits; metrics: Metrics; logger: Logger }): Admit {
  const { db, services, live, rateLimits, metrics, logger } = options;
  const refuse = (error: GraphQLError, request: Parameters<Admit>[0], status: number): never => {
    const code = String(error.extensions.code);
    metrics.graphqlErrors.inc({ code });
    logger.info({ transport: request.transport, requestId: request.requestId, address: request.address, status, errors: [code] }, 'graphql');
    throw error;
  };
  const tooManyFailures = (retryAfterSeconds: number) => rateLimited(retryAfterSeconds, 'Too many failed authentications from this address; retry later.');

  return async (request) => {
    const started = performance.now();
    const blockedFor = await rateLimits.authBlockedFor(request.address);
    if (blockedFor > 0) refuse(tooManyFailures(blockedFor), request, 429);
    try {
      return await createContext(db, services, live, request.authorization, { requestId: request.requestId, clientRequestId: request.clientRequestId, started });
    } catch (error) {
      if (error instanceof GraphQLError && error.extensions.code === ErrorCode.UNAUTHENTICATED) {
        const early = AUTH_FAILURE_FLOOR_MS - (performance.now() - started);
        if (early > 0) await sleep(early);
        if (!(await rateLimits.failedAuthentication(request.address))) refuse(tooManyFailures(60), request, 429);
        refuse(error, request, 401);
      }
      if (isTransientDbError(error)) refuse(unavailable(), request, 503);
      logger.error({ err: error, requestId: request.requestId }, 'authentication failed unexpectedly');
      throw refuse(new GraphQLError('Internal server error', { extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR, requestId: request.requestId } }), request, 500);
    }
  };
}
