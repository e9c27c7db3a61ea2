// The only file that wires everything together: node:http, Apollo Server 5, Express 5 for the
// pages and probes, graphql-ws, the database, auth.
//   POST /graphql   the API (Authorization: Bearer <key>), without Express  http.ts
//   WS   /graphql   subscriptions (graphql-ws)                              ws.ts
//   GET  /graphql   GraphiQL for browsers (offline)                         graphiql.ts
//   GET  /healthz, /readyz, /metrics                                        health.ts
//   GET  /console   the operators' console (a static bundle)
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginInlineTraceDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { makeExecutableSchema } from '@graphql-tools/schema';
import express from 'express';
import type Redis from 'ioredis';
import { enforceAccess } from './access';
import { createAdmission } from './admission';
import { createClientAddress } from './clientAddress';
import type { Config } from './config';
import { createServices, type OperationContext } from './context';
import type { Database } from './db/client';
import { createFormatError } from './formatError';
import { graphiqlAssets, graphiqlPage } from './graphiql';
import { healthRoutes } from './health';
import { graphqlHandler, httpErrorHandler, isGraphQLPost } from './http';
import { createLiveUpdates } from './live';
import type { Logger } from './logger';
import { createMetrics } from './metrics';
import { operationControlsPlugin } from './plugins/operationControls';
import { createOperationControls } from './operations';
import { createRateLimits } from './rateLimit';
import { redisKeyPrefixFor } from './redisKeys';
import { resolvers } from './resolvers';
import { consoleSecurityHeaders } from './securityHeaders';
import { Reachability } from './reachability';
import { startHoldSweeper } from './sweeper';
import { ReadReplicas } from './db/replicas';
import { startWebhookDispatcher } from './webhooks/dispatcher';
import { subscriptionServer } from './ws';

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
  Partial<Pick<Config, 'holdSweepIntervalMs' | 'refusalFlushMs' | 'readReplicas' | 'apiKeyCacheTtlMs' | 'claimBatchMax' | 'claimStatementsInFlight' | 'rateLimit' | 'graphql' | 'corsOrigins' | 'metricsToken' | 'webhooks' | 'trustProxy' | 'websocket' | 'http' | 'redisKeyPrefix'>>;

/** What the tests and main.ts leave out takes these values (the documented defaults). */
const DEFAULT_LIMITS = {
  rateLimit: { pointsPerSecond: 20_000, burstPoints: 100_000, authFailuresPerMinute: 60, authFailureIpv6Prefix: 64 },
  graphql: { maxDepth: 10, maxAliases: 15, maxCost: 20_000, maxTokens: 30_000 },
  http: { maxBodyBytes: { partner: 262_144, operator: 5_242_880 }, requestTimeoutMs: 30_000, headersTimeoutMs: 10_000 },
};

export async function createServer(options: {
  config: ServerConfig;
  db: Database;
  logger: Logger;
  redis?: Redis;
  /** A worker of a WEB_CONCURRENCY cluster: without Redis, rate limits and live signals go through the primary. */
  clusterWorker?: boolean;
}): Promise<TesseraServer> {
  const { config, db, logger } = options;
  // Without a key (tests that leave it out, production without WEBHOOK_SECRET_KEY) webhooks are off.
  const webhooks = config.webhooks ?? { secretKey: undefined, allowPrivateNetworks: false, production: config.env === 'production' };
  const metrics = createMetrics(db.pool);
  if (config.readReplicas?.urls.length) {
    const replicas = new ReadReplicas(db, config.readReplicas.urls, db.options, config.readReplicas.maxLagMs);
    await replicas.start();
    db.useReplicas(replicas);
    logger.info({ replicas: replicas.lags() }, 'read replicas');
  }
  // Every Redis key and channel begins with the deployment's prefix: REDIS_KEY_PREFIX, else one named
  // after the database this server uses (redisKeys.ts), which every instance of the deployment shares.
  const redisKeyPrefix = config.redisKeyPrefix ?? redisKeyPrefixFor(db.options.url);
  const live = createLiveUpdates({ redis: options.redis, redisKeyPrefix, throughPrimary: options.clusterWorker, logger });
  const services = createServices(db, {
    live,
    adminApiKey: config.adminApiKey,
    apiKeyCacheTtlMs: config.apiKeyCacheTtlMs ?? 0,
    claimBatchMax: config.claimBatchMax ?? 1,
    claimStatementsInFlight: config.claimStatementsInFlight ?? 2,
    webhooks,
    metrics,
    logger,
    onError: (err) => logger.warn({ error: (err as Error).message }, 'background write failed'),
  });
  const rateLimits = createRateLimits({ ...DEFAULT_LIMITS.rateLimit, ...config.rateLimit, redis: options.redis, redisKeyPrefix, throughPrimary: options.clusterWorker });
  const introspection = config.graphql?.introspection ?? config.env !== 'production';
  const controls = createOperationControls({ limits: { ...DEFAULT_LIMITS.graphql, ...config.graphql, introspection }, rateLimits, logger, metrics });
  const admit = createAdmission({ db, services, live, rateLimits, metrics, logger, clientAddress: createClientAddress(config.trustProxy) });
  // Schema details stay hidden wherever introspection is off: no "Did you mean …?" either.
  const formatError = createFormatError({ hideSuggestions: !introspection });
  let draining = false;
  const app = express();
  // Its request listener is added once Apollo has started (below): POST /graphql goes straight to
  // the GraphQL handler, everything else to Express.
  // A request's headers must arrive within headersTimeoutMs of its first byte, and its body within
  // requestTimeoutMs: past either, Node answers 408 and closes the connection. Node checks every
  // connectionsCheckingInterval (30 s by default), so a second here keeps the cut-off near the limit.
  const httpLimits = config.http ?? DEFAULT_LIMITS.http;
  const httpServer = http.createServer({
    headersTimeout: httpLimits.headersTimeoutMs,
    requestTimeout: httpLimits.requestTimeoutMs,
    connectionsCheckingInterval: 1000,
  });
  // Idle keep-alive connections stay open longer than a client or load balancer keeps them (60 s is
  // the common idle timeout), so the server never closes a connection under a client that is just
  // reusing it — with Node's 5 s default a busy client saw "fetch failed" now and then. Shutdown
  // does not wait for them: server.close() ends idle connections at once. (The headers' timeout
  // counts from a request's first byte, not from the idle time before it.)
  httpServer.keepAliveTimeout = 65_000;
  app.disable('x-powered-by');
  // No ETag: GraphQL answers are never revalidated, and Express would hash every response body
  // (SHA-1) to make one — 2% of the process's CPU under a claim storm, by profile.
  app.set('etag', false);

  // One executable schema for HTTP (Apollo) and WebSocket subscriptions (graphql-ws) on /graphql,
  // its @requires fields guarded and audited wherever they run (access.ts).
  const schema = enforceAccess(makeExecutableSchema({ typeDefs: readFileSync(SCHEMA_PATH, 'utf8'), resolvers: resolvers as never }));
  const subscriptions = subscriptionServer(httpServer, schema, { admit, controls, formatError, live, logger, recheckMs: config.apiKeyCacheTtlMs ?? 0, limits: config.websocket });

  // Apollo runs the same controls (operations.ts) as the socket: its parser limit and validation
  // rules come from them (the introspection rule among them), its plugin charges and logs through them.
  const apollo = new ApolloServer<OperationContext>({
    schema,
    formatError,
    includeStacktraceInErrorResponses: false,
    // main.ts owns SIGTERM/SIGINT: it stops HTTP first, then the pool, then the embedded database.
    stopOnTerminationSignals: false,
    introspection: true,
    allowBatchedHttpRequests: false,
    parseOptions: { maxTokens: controls.maxTokens },
    validationRules: [...controls.validationRules],
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer, stopGracePeriodMillis: config.shutdownGraceMs }),
      { serverWillStart: async () => ({ drainServer: async () => subscriptions.dispose() }) },
      ApolloServerPluginLandingPageDisabled(),
      // No cache hints in this schema: every answer is no-store (http.ts says so), and no resolver is
      // wrapped to compute a cache policy per field.
      ApolloServerPluginCacheControlDisabled(),
      // Not a federated subgraph: no trace to build (Apollo installs the plugin to check per request).
      ApolloServerPluginInlineTraceDisabled(),
      operationControlsPlugin(controls, logger),
    ],
  });
  await apollo.start();

  const reachability = new Reachability(logger);
  healthRoutes(app, { db, metrics, logger, reachability, draining: () => draining, metricsToken: config.metricsToken, production: config.env === 'production' });
  app.use('/graphiql', graphiqlAssets());
  // The operators' console: a static bundle built from npm packages by `npm install`
  // (scripts/build-console.js); it talks to /graphql like any client.
  app.use('/console', consoleSecurityHeaders(), express.static(CONSOLE_DIST, { index: 'index.html', maxAge: '1m' }));
  app.get('/console', (_req, res) => res.status(503).type('text').send('The console is not built: run npm run build:console.'));
  app.get('/graphql', graphiqlPage());
  const graphql = graphqlHandler(apollo, { db, admit, logger, metrics, corsOrigins: config.corsOrigins ?? [], limits: httpLimits });
  // The rest of /graphql (GET queries, CORS preflights, HEAD, other methods, /GRAPHQL, /graphql/)
  // reaches the same handler through Express.
  app.use('/graphql', graphql);
  // Errors of the other routes answer in GraphQL's shape too, not as an HTML page.
  app.use(httpErrorHandler(logger));
  httpServer.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => (isGraphQLPost(req) ? graphql(req, res) : app(req, res)));

  const sweeper = startHoldSweeper(db, logger, metrics, config.holdSweepIntervalMs ?? 1000, reachability);
  services.refusals.start(config.refusalFlushMs ?? 5000);
  const dispatcher = startWebhookDispatcher(db, logger, metrics, { ...webhooks, reachability });

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
      await services.refusals.stop();
      await dispatcher.stop();
      await live.close();
    },
  };
}
