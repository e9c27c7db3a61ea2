// POST /graphql: CORS, load shedding, the JSON body, then Apollo with the operation's context (who
// is calling: admission.ts); and body-parser failures in GraphQL's shape.
import { randomUUID } from 'node:crypto';
import type { ApolloServer } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import cors from 'cors';
import express from 'express';
import { wellFormedRequestId, type Admit } from './admission';
import type { OperationContext } from './context';
import type { Database } from './db/client';
import { ErrorCode, RETRY_AFTER_SECONDS } from './errors';
import type { Logger } from './logger';
import type { Metrics } from './metrics';

const BODY_LIMIT = '5mb';

export function graphqlRoute(
  app: express.Express,
  apollo: ApolloServer<OperationContext>,
  options: { db: Database; admit: Admit; logger: Logger; metrics: Metrics; corsOrigins: readonly string[] },
): void {
  const { db, admit, logger, metrics } = options;

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
        const requestId = randomUUID();
        res.setHeader('x-request-id', requestId);
        return admit({
          authorization: req.get('authorization'),
          address: req.socket.remoteAddress ?? 'unknown',
          requestId,
          clientRequestId: wellFormedRequestId(req.get('x-request-id')),
          transport: 'http',
        });
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
