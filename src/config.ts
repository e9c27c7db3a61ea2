// Configuration: read from process.env once, validated, frozen. Every message names the variable
// and what is allowed, so a bad deployment fails at start-up instead of at the first claim.
import path from 'node:path';
import proxyAddr from 'proxy-addr';
import { z } from 'zod';
import { generatedAdminKey } from './adminKeyFile';
import { parseHosts } from './db/hosts';
import { tracingConfigFrom, type TracingConfig } from './tracing/config';
import { webhookKeyFrom } from './webhooks/secrets';

/**
 * Workers `npm start` runs when WEB_CONCURRENCY is unset. Chosen by `npm run bench`, which measures
 * one process against a cluster of one worker per core beside PostgreSQL on the same machine: on the
 * 2-core machines here one process serves more claims — the cores are already busy with PostgreSQL,
 * and one process's group claims stay larger.
 */
export const DEFAULT_WEB_CONCURRENCY = 1;

const intFrom = (name: string, fallback: number, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw.trim() === '') return fallback;
      const value = Number(raw);
      if (!Number.isInteger(value) || value < min || value > max) {
        ctx.addIssue({ code: 'custom', message: `${name} must be an integer from ${min} to ${max} (got "${raw}")` });
        return z.NEVER;
      }
      return value;
    });

/** True when every entry of TRUST_PROXY is an address, a CIDR or one of proxy-addr's names (loopback…). */
function trustParses(list: string): boolean {
  try {
    proxyAddr.compile(splitList(list));
    return true;
  } catch {
    return false;
  }
}

const splitList = (value: string | undefined): string[] => (value ?? '').split(',').map((item) => item.trim()).filter(Boolean);

/** True when DATABASE_URL's host list and target_session_attrs are ones Tessera can honour (db/hosts.ts). */
function hostsParse(url: string): boolean {
  try {
    parseHosts(url);
    return true;
  } catch {
    return false;
  }
}

const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test'], {
    error: 'NODE_ENV must be one of development, production, test',
  }).default('development'),
  PORT: intFrom('PORT', 4000, 0, 65535),
  HOST: z.string().optional(),
  DATABASE_URL: z
    .string()
    .optional()
    .refine((url) => url === undefined || url === '' || /^postgres(ql)?:\/\//.test(url), {
      message: 'DATABASE_URL must be a postgres:// or postgresql:// URL (or unset for the embedded database)',
    })
    .refine((url) => !url || hostsParse(url), {
      message: 'DATABASE_URL: target_session_attrs must be read-write (the primary only) or any (the first host that answers)',
    }),
  DATABASE_DIRECT_URL: z
    .string()
    .optional()
    .refine((url) => url === undefined || url === '' || /^postgres(ql)?:\/\//.test(url), {
      message: 'DATABASE_DIRECT_URL must be a postgres:// or postgresql:// URL (a direct connection to the primary, for migrations)',
    }),
  DATABASE_POOLER: z.enum(['pgbouncer', 'none', ''], { error: 'DATABASE_POOLER must be pgbouncer or none (or unset: detected at start)' }).optional(),
  DATABASE_READ_URL: z
    .string()
    .optional()
    .refine((value) => !value || value.split(',').every((url) => /^postgres(ql)?:\/\//.test(url.trim())), {
      message: 'DATABASE_READ_URL must be one or more postgres:// URLs, separated by commas',
    }),
  READ_MAX_LAG_MS: intFrom('READ_MAX_LAG_MS', 5000, 0, 3_600_000),
  ADMIN_API_KEY: z
    .string()
    .optional()
    .refine((key) => key === undefined || key === '' || key.length >= 16, {
      message: 'ADMIN_API_KEY must be at least 16 characters',
    }),
  DATABASE_POOL_SIZE: intFrom('DATABASE_POOL_SIZE', 10, 1, 1000),
  DATABASE_POOL_TIMEOUT_MS: intFrom('DATABASE_POOL_TIMEOUT_MS', 5000, 1, 600_000),
  DATABASE_POOL_MAX_WAITING: intFrom('DATABASE_POOL_MAX_WAITING', 1000, 0, 1_000_000),
  DATABASE_STATEMENT_TIMEOUT_MS: intFrom('DATABASE_STATEMENT_TIMEOUT_MS', 5000, 1, 3_600_000),
  DATABASE_LOCK_TIMEOUT_MS: intFrom('DATABASE_LOCK_TIMEOUT_MS', 3000, 1, 3_600_000),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: intFrom('DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', 10_000, 1, 3_600_000),
  EMBEDDED_PG_DIR: z.string().default('.tessera/pgdata'),
  EMBEDDED_PG_PORT: intFrom('EMBEDDED_PG_PORT', 54329, 1, 65535),
  WEB_CONCURRENCY: intFrom('WEB_CONCURRENCY', DEFAULT_WEB_CONCURRENCY, 1, 64),
  SHUTDOWN_GRACE_MS: intFrom('SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
  HOLD_SWEEP_INTERVAL_MS: intFrom('HOLD_SWEEP_INTERVAL_MS', 1000, 0, 3_600_000),
  REFUSAL_FLUSH_MS: intFrom('REFUSAL_FLUSH_MS', 5000, 100, 600_000),
  API_KEY_CACHE_TTL_MS: intFrom('API_KEY_CACHE_TTL_MS', 5000, 0, 3_600_000),
  CLAIM_BATCH_MAX: intFrom('CLAIM_BATCH_MAX', 32, 1, 1000),
  CLAIM_STATEMENTS_IN_FLIGHT: intFrom('CLAIM_STATEMENTS_IN_FLIGHT', 2, 1, 1000),
  REDIS_URL: z
    .string()
    .optional()
    .refine((url) => url === undefined || url === '' || /^rediss?:\/\//.test(url), { message: 'REDIS_URL must be a redis:// or rediss:// URL' }),
  REDIS_KEY_PREFIX: z
    .string()
    .optional()
    .refine((prefix) => !prefix || /^[\x21-\x7e]{1,100}$/.test(prefix), {
      message: 'REDIS_KEY_PREFIX must be 1 to 100 printable ASCII characters without spaces, e.g. tessera:production: (or unset: tessera:<database name>:)',
    }),
  RATE_LIMIT_POINTS_PER_SECOND: intFrom('RATE_LIMIT_POINTS_PER_SECOND', 20_000, 1, 10_000_000),
  RATE_LIMIT_BURST_POINTS: intFrom('RATE_LIMIT_BURST_POINTS', 100_000, 0, 100_000_000),
  AUTH_FAILURES_PER_MINUTE: intFrom('AUTH_FAILURES_PER_MINUTE', 60, 1, 1_000_000),
  AUTH_FAILURE_IPV6_PREFIX: intFrom('AUTH_FAILURE_IPV6_PREFIX', 64, 1, 128),
  GRAPHQL_INTROSPECTION: z.enum(['true', 'false', '']).optional(),
  GRAPHQL_MAX_DEPTH: intFrom('GRAPHQL_MAX_DEPTH', 10, 1, 100),
  GRAPHQL_MAX_ALIASES: intFrom('GRAPHQL_MAX_ALIASES', 15, 1, 1000),
  GRAPHQL_MAX_COST: intFrom('GRAPHQL_MAX_COST', 20_000, 1, 10_000_000),
  GRAPHQL_MAX_TOKENS: intFrom('GRAPHQL_MAX_TOKENS', 30_000, 100, 10_000_000),
  CORS_ORIGINS: z.string().optional(),
  TRUST_PROXY: z
    .string()
    .optional()
    .refine((list) => !list || trustParses(list), {
      message: 'TRUST_PROXY must be IP addresses or CIDRs (or loopback, linklocal, uniquelocal), separated by commas',
    }),
  TRUST_PROXY_HEADER: z.enum(['x-forwarded-for', 'forwarded', ''], { error: 'TRUST_PROXY_HEADER must be x-forwarded-for or forwarded (or unset)' }).optional(),
  HTTP_MAX_BODY_BYTES_PARTNER: intFrom('HTTP_MAX_BODY_BYTES_PARTNER', 262_144, 1024, 104_857_600),
  HTTP_MAX_BODY_BYTES_OPERATOR: intFrom('HTTP_MAX_BODY_BYTES_OPERATOR', 5_242_880, 1024, 104_857_600),
  HTTP_HEADERS_TIMEOUT_MS: intFrom('HTTP_HEADERS_TIMEOUT_MS', 10_000, 1000, 600_000),
  HTTP_REQUEST_TIMEOUT_MS: intFrom('HTTP_REQUEST_TIMEOUT_MS', 30_000, 1000, 3_600_000),
  WS_MAX_MESSAGE_BYTES: intFrom('WS_MAX_MESSAGE_BYTES', 1_048_576, 1024, 104_857_600),
  WS_MAX_UNAUTHENTICATED_BYTES: intFrom('WS_MAX_UNAUTHENTICATED_BYTES', 16_384, 256, 104_857_600),
  WS_MAX_SUBSCRIPTIONS_PER_SOCKET: intFrom('WS_MAX_SUBSCRIPTIONS_PER_SOCKET', 20, 1, 100_000),
  WS_MAX_SUBSCRIPTIONS_PER_KEY: intFrom('WS_MAX_SUBSCRIPTIONS_PER_KEY', 100, 1, 1_000_000),
  WEBHOOK_SECRET_KEY: z.string().optional(),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: z.enum(['true', 'false', '']).optional(),
  METRICS_TOKEN: z
    .string()
    .optional()
    .refine((token) => token === undefined || token === '' || /^[\x21-\x7e]{16,}$/.test(token), {
      message: 'METRICS_TOKEN must be at least 16 characters, printable ASCII without spaces (it is sent in an Authorization header)',
    }),
});

/** The validated configuration: what loadConfig returns, frozen. */
export type Config = ReturnType<typeof loadConfig>;

/** What HTTP reads of a request, and for how long it waits (src/http.ts). */
export type HttpLimits = Config['http'];

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  - ${issue.path.join('.') || 'env'}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  let tracing: TracingConfig | null;
  try {
    tracing = tracingConfigFrom(env);
  } catch (error) {
    throw new ConfigError(`Invalid configuration:\n  - ${(error as Error).message}`);
  }
  const databaseUrl = e.DATABASE_URL ? e.DATABASE_URL : undefined;
  const givenKey = e.ADMIN_API_KEY ? e.ADMIN_API_KEY : undefined;
  if (e.NODE_ENV === 'production') {
    const missing = [!databaseUrl && 'DATABASE_URL', !givenKey && 'ADMIN_API_KEY'].filter(Boolean);
    if (missing.length > 0) {
      throw new ConfigError(
        `NODE_ENV=production requires ${missing.join(' and ')}: production never uses the embedded database or a generated admin key.`,
      );
    }
  }
  const embeddedDir = path.resolve(e.EMBEDDED_PG_DIR);
  const adminApiKey = givenKey ?? generatedAdminKey(embeddedDir);
  const production = e.NODE_ENV === 'production';
  const webhookSecretKey =
    e.WEBHOOK_SECRET_KEY || !production ? webhookKeyFrom(e.WEBHOOK_SECRET_KEY || undefined, { production, stateDir: path.dirname(embeddedDir) }) : undefined;
  // A server given no IPv6 prefix (tests, tools) counts per /64: the key is optional in Config.
  const authFailureIpv6: { readonly authFailureIpv6Prefix?: number } = { authFailureIpv6Prefix: e.AUTH_FAILURE_IPV6_PREFIX };
  return Object.freeze({
    env: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST || undefined,
    /** undefined: start the embedded PostgreSQL. */
    databaseUrl,
    /** A direct connection to the primary for migrations (DATABASE_DIRECT_URL); required behind a pooler. */
    databaseDirectUrl: e.DATABASE_DIRECT_URL ? e.DATABASE_DIRECT_URL : undefined,
    adminApiKey,
    /** true when the admin key was generated at start-up (not given in ADMIN_API_KEY). */
    adminApiKeyGenerated: givenKey === undefined,
    database: Object.freeze({
      poolSize: e.DATABASE_POOL_SIZE,
      poolTimeoutMs: e.DATABASE_POOL_TIMEOUT_MS,
      /** Requests beyond this many waiting for a connection are answered 503 at once. */
      poolMaxWaiting: e.DATABASE_POOL_MAX_WAITING,
      statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
      lockTimeoutMs: e.DATABASE_LOCK_TIMEOUT_MS,
      idleInTransactionTimeoutMs: e.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
      /**
       * What DATABASE_URL points at: PgBouncer in transaction mode (no start-up parameters, no named
       * prepared statements, the session settings as role settings: db/sessionSettings.ts), PostgreSQL
       * itself ('none'), or null: detected at start (db/pooler.ts).
       */
      pooler: e.DATABASE_POOLER ? e.DATABASE_POOLER : null,
    }),
    embedded: Object.freeze({ dir: embeddedDir, port: e.EMBEDDED_PG_PORT }),
    /** Streaming replicas for the reads that may be a moment stale (src/db/replicas.ts); [] for none. */
    readReplicas: Object.freeze({
      urls: Object.freeze((e.DATABASE_READ_URL ?? '').split(',').map((url) => url.trim()).filter(Boolean)),
      maxLagMs: e.READ_MAX_LAG_MS,
    }),
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    /** Worker processes `npm start` runs (node:cluster, sharing the port); 1 serves in the process itself. */
    webConcurrency: e.WEB_CONCURRENCY,
    /** How often expired holds are returned to the pool; 0 turns the sweeper off. */
    holdSweepIntervalMs: e.HOLD_SWEEP_INTERVAL_MS,
    /** How often each instance adds the claim refusals it counted to refusal_counters (the timeline's `refused`). */
    refusalFlushMs: e.REFUSAL_FLUSH_MS,
    /** How long a partner key's record is cached: the bound on a revocation made elsewhere. */
    apiKeyCacheTtlMs: e.API_KEY_CACHE_TTL_MS,
    /** Most claims one group statement serves; 1 turns group claims off. */
    claimBatchMax: e.CLAIM_BATCH_MAX,
    /** Most first-look claim statements (alone or in groups) one process runs at once; the rest wait and go together. */
    claimStatementsInFlight: e.CLAIM_STATEMENTS_IN_FLIGHT,
    /** The store the instances share: rate limits, and live updates between instances; undefined: each instance alone. */
    redisUrl: e.REDIS_URL ? e.REDIS_URL : undefined,
    /** What every Redis key and channel begins with (src/redisKeys.ts); undefined: `tessera:<database name>:`. */
    redisKeyPrefix: e.REDIS_KEY_PREFIX ? e.REDIS_KEY_PREFIX : undefined,
    rateLimit: Object.freeze({
      pointsPerSecond: e.RATE_LIMIT_POINTS_PER_SECOND,
      burstPoints: e.RATE_LIMIT_BURST_POINTS,
      authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
      /** An IPv6 client's failed authentications are counted per network of this many bits (left out: 64). */
      ...authFailureIpv6,
    }),
    /** Limits applied to every GraphQL document before it runs (graphql-armor). */
    graphql: Object.freeze({
      introspection: e.GRAPHQL_INTROSPECTION ? e.GRAPHQL_INTROSPECTION === 'true' : e.NODE_ENV !== 'production',
      maxDepth: e.GRAPHQL_MAX_DEPTH,
      maxAliases: e.GRAPHQL_MAX_ALIASES,
      maxCost: e.GRAPHQL_MAX_COST,
      maxTokens: e.GRAPHQL_MAX_TOKENS,
    }),
    /** Browser origins allowed to call the API cross-origin; empty: none. */
    corsOrigins: Object.freeze(splitList(e.CORS_ORIGINS)),
    /**
     * Proxies whose forwarding header names the client (TRUST_PROXY: addresses, CIDRs; none by
     * default), and which header they set (TRUST_PROXY_HEADER; undefined: whichever one is present,
     * neither when both are). src/clientAddress.ts.
     */
    trustProxy: Object.freeze({ addresses: Object.freeze(splitList(e.TRUST_PROXY)), header: e.TRUST_PROXY_HEADER || undefined }),
    /** HTTP's own limits (src/http.ts). */
    http: Object.freeze({
      /** The largest body, in bytes, by who sent it; a request without a valid key gets none read. */
      maxBodyBytes: Object.freeze({ partner: e.HTTP_MAX_BODY_BYTES_PARTNER, operator: e.HTTP_MAX_BODY_BYTES_OPERATOR }),
      /** From a request's first byte to the end of its body: past it, 408 and the connection closed. */
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      /** From a request's first byte to the end of its headers (at most requestTimeoutMs). */
      headersTimeoutMs: Math.min(e.HTTP_HEADERS_TIMEOUT_MS, e.HTTP_REQUEST_TIMEOUT_MS),
    }),
    /** The WebSocket's own limits (src/ws.ts). */
    websocket: Object.freeze({
      /** The largest message an accepted socket may send (ws's maxPayload). */
      maxMessageBytes: e.WS_MAX_MESSAGE_BYTES,
      /** What a socket may send in all before its connection_init is accepted. */
      maxUnauthenticatedBytes: Math.min(e.WS_MAX_UNAUTHENTICATED_BYTES, e.WS_MAX_MESSAGE_BYTES),
      /** Subscriptions open at once on one socket. */
      maxSubscriptionsPerSocket: e.WS_MAX_SUBSCRIPTIONS_PER_SOCKET,
      /** Subscriptions open at once for one key, on one instance. */
      maxSubscriptionsPerKey: e.WS_MAX_SUBSCRIPTIONS_PER_KEY,
    }),
    /** When set, GET /metrics requires `Authorization: Bearer <metricsToken>`; undefined: /metrics is open. */
    metricsToken: e.METRICS_TOKEN ? e.METRICS_TOKEN : undefined,
    /** OpenTelemetry tracing (the OTEL_* variables: src/tracing/config.ts); null: off. */
    tracing,
    webhooks: Object.freeze({
      /**
       * The key that seals endpoint secrets (WEBHOOK_SECRET_KEY; generated once outside production).
       * Undefined in production without the variable: webhooks are then off, and createWebhook says why.
       */
      secretKey: webhookSecretKey,
      /** Production only: may endpoints be on private networks (src/webhooks/urlPolicy.ts). */
      allowPrivateNetworks: e.WEBHOOK_ALLOW_PRIVATE_NETWORKS === 'true',
      /** https only, and the private-range rule (NODE_ENV=production). */
      production,
    }),
  });
}
