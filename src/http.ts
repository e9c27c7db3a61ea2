// POST /graphql: CORS, load shedding, the JSON body, then Apollo with the request's context; and
// body-parser failures in GraphQL's shape.
import { randomUUID } from 'node:crypto';
import type { ApolloServer } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import cors from 'cors';
import express from 'express';
import { GraphQLError } from 'graphql';
import { createContext, type Context, type Services } from './context';
import type { Database } from './db/client';
import { isTransientDbError } from './db/pgErrors';
import { ErrorCode, RETRY_AFTER_SECONDS, rateLimited, unavailable } from './errors';
import type { LiveUpdates } from './live';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import type { RateLimits } from './rateLimit';

const BODY_LIMIT = '5mb';

export function graphqlRoute(
  app: express.Express,
  apollo: ApolloServer<Context & { requestId: string }>,
  options: { db: Database; services: Services; live: LiveUpdates; logger: Logger; metrics: Metrics; rateLimits: RateLimits; corsOrigins: readonly string[] },
): void {
  const { db, services, live, logger, metrics, rateLimits } = options;

  // Load shedding: when the pool's queue is already full, answer at once rather than queue a
  // request that would only time out. Nothing has touched the database, so a retry is always safe.
  const shed: express.RequestHandler = (req, res, next) => {
    if (req.method !== 'POST' || !db.saturated()) return next();
    metrics.shed.inc();
    res
      .status(503)
      .set('retry-after', String(RETRY_AFTER_SECONDS))
      .json({ errors: [{ message: 'Too many requests are waiting for the database; retry shortly.', extensions: { code: ErrorCode.UNAVAILABLE, retryable: true } }] });
  };

  // Cross-origin browsers: only the allow-listed origins (CORS_ORIGINS); none by default. Apollo's
  // CSRF prevention stays on whatever this allows.
  const corsOrigins = options.corsOrigins;
  app.use('/graphql', cors({ origin: corsOrigins.includes('*') ? true : [...corsOrigins], maxAge: 600 }));

  app.use(
    '/graphql',
    shed,
    express.json({ limit: BODY_LIMIT }),
    expressMiddleware(apollo, {
      context: async ({ req, res }) => {
        const header = req.get('x-request-id');
        const requestId = header && /^[\w.:-]{1,100}$/.test(header) ? header : randomUUID();
        res.setHeader('x-request-id', requestId);
        try {
          return { ...(await createContext(db, services, live, req.get('authorization'))), requestId };
        } catch (error) {
          if (error instanceof GraphQLError) {
            const code = String(error.extensions.code);
            // Guessing keys is slow: an address with too many failures gets 429 for a while.
            if (code === ErrorCode.UNAUTHENTICATED && !(await rateLimits.failedAuthentication(req.ip ?? 'unknown'))) {
              metrics.graphqlErrors.inc({ code: ErrorCode.RATE_LIMITED });
              throw rateLimited(60, 'Too many failed authentications from this address; retry later.');
            }
            metrics.graphqlErrors.inc({ code });
            logger.info({ requestId, status: 401, errors: [code] }, 'graphql');
            throw error;
          }
          if (isTransientDbError(error)) throw unavailable();
          logger.error({ err: error, requestId }, 'context creation failed');
          throw new GraphQLError('Internal server error', { extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR, requestId } });
        }
      },
    }),
  );

  // Body-parser failures (oversized or malformed JSON) answer in GraphQL's shape, not as an HTML page.
  app.use((error: { status?: number; type?: string }, _req: express.Request, res: express.Response, next: express.NextFunction) => {
    if (res.headersSent) return next(error);
    const status = error.status && error.status >= 400 && error.status < 500 ? error.status : 500;
    const tooLarge = error.type === 'entity.too.large';
    if (status === 500) logger.error({ err: error }, 'unhandled HTTP error');
    res.status(status).json({
      errors: [
        {
          message: tooLarge ? 'The request body is larger than the 5 MB limit.' : status === 500 ? 'Internal server error' : 'The request body is not valid JSON.',
          extensions: { code: tooLarge ? 'PAYLOAD_TOO_LARGE' : status === 500 ? ErrorCode.INTERNAL_SERVER_ERROR : 'BAD_REQUEST' },
        },
      ],
    });
  });
}
