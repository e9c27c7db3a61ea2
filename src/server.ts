// The only file that wires everything together: Express 5, Apollo Server 5, the database, auth.
//   POST /graphql   the API (Authorization: Bearer <key>)
//   GET  /graphql   GraphiQL for browsers (offline)
//   GET  /healthz   200 while the process serves and can serve claims (database answers, migrations applied)
//   GET  /readyz    the same, and 503 as soon as a shutdown begins (take the instance out of rotation)
//   GET  /metrics   Prometheus metrics
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { expressMiddleware } from '@as-integrations/express5';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import cors from 'cors';
import express from 'express';
import type Redis from 'ioredis';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { Config } from './config';
import { createContext, createServices, type Context } from './context';
import type { Database } from './db/client';
import { pendingMigrations } from './db/migrate';
import { isTransientDbError } from './db/pgErrors';
import { ErrorCode, InvalidInput } from './errors';
import { GRAPHIQL_HTML, graphiqlAssets } from './graphiql';
import type { Logger } from './logger';
import { createMetrics } from './metrics';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import { auditPlugin } from './audit';
import { createLiveUpdates } from './live';
import { createRateLimits, operationCost } from './rateLimit';
import { resolvers } from './resolvers';
import { startHoldSweeper } from './sweeper';

export const SCHEMA_PATH = path.resolve(__dirname, '../schema.graphql');
const CONSOLE_DIST = path.resolve(__dirname, '../console/dist');

export interface TesseraServer {
  readonly app: express.Express;
  readonly httpServer: http.Server;
  listen(port: number, host?: string): Promise<{ port: number }>;
  /** Stops accepting, lets in-flight requests finish (bounded by `graceMs`), then closes. */
  stop(): Promise<void>;
}

type ServerConfig = Pick<Config, 'env' | 'adminApiKey' | 'shutdownGraceMs'> &
  Partial<Pick<Config, 'holdSweepIntervalMs' | 'apiKeyCacheTtlMs' | 'claimBatchMax' | 'rateLimit' | 'graphql' | 'corsOrigins'>>;

/** What the tests and main.ts leave out takes these values (the documented defaults). */
const DEFAULT_LIMITS = {
  rateLimit: { pointsPerSecond: 20_000, burstPoints: 100_000, authFailuresPerMinute: 60 },
  graphql: { maxDepth: 10, maxAliases: 15, maxCost: 20_000, maxTokens: 30_000 },
};

/** Codes a client may see as they are; anything else is masked. */
const PUBLIC_CODES = new Set<string>([
  ...Object.values(ErrorCode),
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
]);

const RETRY_AFTER_SECONDS = 1;

function rateLimited(retryAfterSeconds: number, message: string): GraphQLError {
  return new GraphQLError(message, {
    extensions: {
      code: ErrorCode.RATE_LIMITED,
      retryAfterSeconds,
      http: { status: 429, headers: new Map([['retry-after', String(retryAfterSeconds)]]) },
    },
  });
}

export async function createServer(options: {
  config: ServerConfig;
  db: Database;
  logger: Logger;
  redis?: Redis;
  /** A worker of a WEB_CONCURRENCY cluster: without Redis, rate limits and live signals go through the primary. */
  clusterWorker?: boolean;
}): Promise<TesseraServer> {
  const { config, db, logger } = options;
  const metrics = createMetrics(db.pool);
  const live = createLiveUpdates({ redis: options.redis, throughPrimary: options.clusterWorker, logger });
  const services = createServices(db, {
    live,
    adminApiKey: config.adminApiKey,
    apiKeyCacheTtlMs: config.apiKeyCacheTtlMs ?? 0,
    claimBatchMax: config.claimBatchMax ?? 1,
    metrics,
    onError: (err) => logger.warn({ error: (err as Error).message }, 'background write failed'),
  });
  const rateLimits = createRateLimits({ ...DEFAULT_LIMITS.rateLimit, ...config.rateLimit, redis: options.redis, throughPrimary: options.clusterWorker });
  const limits = { ...DEFAULT_LIMITS.graphql, ...config.graphql };
  // Abusive documents are refused before they run (depth, aliases — 200 aliased claims allocate
  // nothing —, cost, tokens, directives); field suggestions only outside production.
  const armor = new ApolloArmor({
    maxDepth: { n: limits.maxDepth, ignoreIntrospection: true },
    maxAliases: { n: limits.maxAliases },
    costLimit: { maxCost: limits.maxCost, ignoreIntrospection: true },
    // Tokens are limited by graphql-js's own parser (parseOptions below): armor's token plugin
    // re-parses in a plugin hook, where a plain syntax error becomes a 500.
    maxTokens: { enabled: false },
    maxDirectives: { n: 50 },
    blockFieldSuggestion: { enabled: config.env === 'production' },
  }).protect();
  let draining = false;
  const app = express();
  const httpServer = http.createServer(app);
  app.disable('x-powered-by');
  // No ETag: GraphQL answers are never revalidated, and Express would hash every response body
  // (SHA-1) to make one — 2% of the process's CPU under a claim storm, by profile.
  app.set('etag', false);

  // Unexpected errors are logged with their cause and request id, and reach the client as
  // INTERNAL_SERVER_ERROR with that id only: no stack, no SQL. Transient database trouble is
  // UNAVAILABLE (retry); validation failures are BAD_USER_INPUT naming the field.
  const formatError = (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    const requestId = (error as { requestId?: string } | undefined)?.requestId;
    if (original instanceof InvalidInput) {
      return { message: original.message, path: formatted.path, extensions: { code: ErrorCode.BAD_USER_INPUT, field: original.field } };
    }
    if (isTransientDbError(original)) {
      return {
        message: 'The database is busy or unreachable; retry shortly (claims with their idempotency key).',
        path: formatted.path,
        extensions: { code: ErrorCode.UNAVAILABLE, retryable: true },
      };
    }
    const code = formatted.extensions?.code;
    if (typeof code === 'string' && PUBLIC_CODES.has(code) && code !== ErrorCode.INTERNAL_SERVER_ERROR) {
      const { stacktrace: _stacktrace, ...extensions } = formatted.extensions ?? {};
      return { ...formatted, extensions };
    }
    return {
      message: 'Internal server error',
      path: formatted.path,
      extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR, ...(requestId ? { requestId } : {}) },
    };
  };

  // One log line per operation (never the API key, never variables or metadata), request ids on
  // errors for formatError, 503 + Retry-After when the database was the problem, error counts.
  const operations: ApolloServerPlugin<Context & { requestId: string }> = {
    async requestDidStart({ contextValue }) {
      const started = performance.now();
      return {
        async didEncounterErrors({ errors, response }) {
          let transient = false;
          for (const error of errors) {
            const original = unwrapResolverError(error);
            (error as GraphQLError & { requestId?: string }).requestId = contextValue.requestId;
            if (isTransientDbError(original) || (original instanceof GraphQLError && original.extensions.code === ErrorCode.UNAVAILABLE)) transient = true;
            else if (!(original instanceof GraphQLError) && !(original instanceof InvalidInput)) {
              logger.error({ err: original, requestId: contextValue.requestId, path: error.path }, 'unexpected error');
            }
          }
          if (transient) {
            response.http.status = 503;
            response.http.headers.set('retry-after', String(RETRY_AFTER_SECONDS));
          }
        },
        async willSendResponse({ response, operation, operationName }) {
          const body = response.body.kind === 'single' ? response.body.singleResult : undefined;
          const codes = (body?.errors ?? []).map((e) => String(e.extensions?.code ?? 'UNKNOWN'));
          for (const code of codes) metrics.graphqlErrors.inc({ code });
          logger.info(
            {
              requestId: contextValue.requestId,
              viewer: contextValue.viewer?.kind,
              partnerId: contextValue.viewer?.kind === 'partner' ? contextValue.viewer.partnerId : undefined,
              operation: operationName ?? undefined,
              type: operation?.operation,
              status: response.http.status ?? 200,
              ms: Math.round((performance.now() - started) * 10) / 10,
              ...(codes.length ? { errors: codes } : {}),
            },
            'graphql',
          );
        },
      };
    },
  };

  // Rate limits per API key, by what the operation costs (rateLimit.ts); the admin key is not limited.
  const rateLimiting: ApolloServerPlugin<Context & { requestId: string }> = {
    async requestDidStart() {
      return {
        async didResolveOperation({ contextValue, operation }) {
          const viewer = contextValue.viewer;
          if (viewer?.kind !== 'partner' || !operation) return;
          const verdict = await rateLimits.consume(viewer.partnerId, operationCost(operation), viewer.rateLimit);
          if (!verdict.allowed) throw rateLimited(verdict.retryAfterSeconds, 'This API key has used its rate limit; retry after the given seconds.');
        },
      };
    },
  };

  // One executable schema for HTTP (Apollo) and WebSocket subscriptions (graphql-ws) on /graphql.
  const schema = makeExecutableSchema({ typeDefs: readFileSync(SCHEMA_PATH, 'utf8'), resolvers: resolvers as never });
  const wsServer = new WebSocketServer({ server: httpServer, path: '/graphql' });
  const subscriptions = useServer<Record<string, unknown>, { context?: Context }>(
    {
      schema,
      // The key comes in the connection's payload, as a browser cannot set headers on a WebSocket.
      onConnect: async (ctx) => {
        const params = ctx.connectionParams ?? {};
        const header = typeof params.Authorization === 'string' ? params.Authorization : typeof params.authorization === 'string' ? params.authorization : undefined;
        try {
          ctx.extra.context = await createContext(db, services, live, header);
          return true;
        } catch {
          return false; // closes with 4403 Forbidden
        }
      },
      context: (ctx) => ({ ...ctx.extra.context!, requestId: randomUUID() }),
    },
    wsServer,
  );

  const apollo = new ApolloServer<Context & { requestId: string }>({
    schema,
    formatError,
    includeStacktraceInErrorResponses: false,
    // main.ts owns SIGTERM/SIGINT: it stops HTTP first, then the pool, then the embedded database.
    stopOnTerminationSignals: false,
    introspection: config.graphql?.introspection ?? config.env !== 'production',
    allowBatchedHttpRequests: false,
    parseOptions: { maxTokens: limits.maxTokens },
    validationRules: armor.validationRules,
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer, stopGracePeriodMillis: config.shutdownGraceMs }),
      { serverWillStart: async () => ({ drainServer: async () => subscriptions.dispose() }) },
      ApolloServerPluginLandingPageDisabled(),
      ...armor.plugins,
      operations,
      rateLimiting,
      auditPlugin(db, logger),
    ],
  });
  await apollo.start();

  const databaseReady = async (): Promise<{ ready: boolean; body: Record<string, unknown> }> => {
    try {
      const pending = await pendingMigrations(async (sql) => (await db.pool.query(sql)).rows);
      return pending.length > 0 ? { ready: false, body: { status: 'migrating', pending } } : { ready: true, body: { status: 'ok' } };
    } catch (error) {
      logger.warn({ err: error }, 'health check: database unreachable');
      return { ready: false, body: { status: 'unavailable', database: 'unreachable' } };
    }
  };
  app.get('/healthz', async (_req, res) => {
    const { ready, body } = await databaseReady();
    res.status(ready ? 200 : 503).json(body);
  });
  app.get('/readyz', async (_req, res) => {
    if (draining) {
      res.status(503).json({ status: 'draining' });
      return;
    }
    const { ready, body } = await databaseReady();
    res.status(ready ? 200 : 503).json(body);
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  app.use('/graphiql', graphiqlAssets());
  // The operators' console: a static bundle built from npm packages by `npm install`
  // (scripts/build-console.js); it talks to /graphql like any client.
  app.use('/console', express.static(CONSOLE_DIST, { index: 'index.html', maxAge: '1m' }));
  app.get('/console', (_req, res) => res.status(503).type('text').send('The console is not built: run npm run build:console.'));
  app.get('/graphql', (req, res, next) => {
    if (req.accepts(['application/json', 'text/html']) === 'text/html') res.type('html').send(GRAPHIQL_HTML);
    else next();
  });

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
  const corsOrigins = config.corsOrigins ?? [];
  app.use('/graphql', cors({ origin: corsOrigins.includes('*') ? true : [...corsOrigins], maxAge: 600 }));

  app.use(
    '/graphql',
    shed,
    express.json({ limit: '5mb' }),
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
          if (isTransientDbError(error)) {
            throw new GraphQLError('The database is busy or unreachable; retry shortly.', {
              extensions: { code: ErrorCode.UNAVAILABLE, retryable: true, http: { status: 503, headers: new Map([['retry-after', String(RETRY_AFTER_SECONDS)]]) } },
            });
          }
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

  const sweeper = startHoldSweeper(db, logger, metrics, config.holdSweepIntervalMs ?? 1000);

  return {
    app,
    httpServer,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        httpServer.once('error', reject);
        httpServer.listen(port, host, () => {
          const address = httpServer.address();
          resolve({ port: typeof address === 'object' && address ? address.port : port });
        });
      }),
    stop: async () => {
      draining = true;
      await apollo.stop();
      await sweeper.stop();
      await live.close();
    },
  };
}
