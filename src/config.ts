// Configuration: read from process.env once, validated, frozen. Every message names the variable
// and what is allowed, so a bad deployment fails at start-up instead of at the first claim.
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import proxyAddr from 'proxy-addr';
import { z } from 'zod';
import { parseHosts } from './db/hosts';
import { tracingConfigFrom, type TracingConfig } from './tracing/config';
import { webhookKeyFrom } from './webhooks/secrets';

/**
 * Workers `npm start` runs when WEB_CONCURRENCY is unset. Chosen by `npm run bench`, which measures
 * one process against a cluster of one worker per core beside PostgreSQL on the same machine: on the
 * 2-core machines here one process serves more claims (docs/BENCHMARKS.md, docs/SCALING.md) — the
 * cores are already busy with PostgreSQL, and one process's group claims stay larger.
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

/** What HTTP reads of a request, and for how long it waits (src/http.ts). */
export interface HttpLimits {
  /** The largest body, in bytes, by who sent it; a request without a valid key gets none read. */
  readonly maxBodyBytes: { readonly partner: number; readonly operator: number };
  /** From a request's first byte to the end of its body: past it, 408 and the connection closed. */
  readonly requestTimeoutMs: number;
  /** From a request's first byte to the end of its headers (at most requestTimeoutMs). */
  readonly headersTimeoutMs: number;
}

export interface Config {
  readonly env: 'development' | 'production' | 'test';
  readonly port: number;
  readonly host: string | undefined;
  /** undefined: start the embedded PostgreSQL. */
  readonly databaseUrl: string | undefined;
  /** A direct connection to the primary for migrations (DATABASE_DIRECT_URL); required behind a pooler. */
  readonly databaseDirectUrl: string | undefined;
  readonly adminApiKey: string;
  /** true when the admin key was generated at start-up (not given in ADMIN_API_KEY). */
  readonly adminApiKeyGenerated: boolean;
  readonly database: {
    readonly poolSize: number;
    readonly poolTimeoutMs: number;
    /** Requests beyond this many waiting for a connection are answered 503 at once. */
    readonly poolMaxWaiting: number;
    readonly statementTimeoutMs: number;
    readonly lockTimeoutMs: number;
    readonly idleInTransactionTimeoutMs: number;
    /**
     * What DATABASE_URL points at: PgBouncer in transaction mode (no start-up parameters, no named
     * prepared statements, the session settings as role settings: db/sessionSettings.ts), PostgreSQL
     * itself ('none'), or null: detected at start (db/pooler.ts).
     */
    readonly pooler: 'pgbouncer' | 'none' | null;
  };
  readonly embedded: { readonly dir: string; readonly port: number };
  /** Streaming replicas for the reads that may be a moment stale (src/db/replicas.ts); [] for none. */
  readonly readReplicas: { readonly urls: readonly string[]; readonly maxLagMs: number };
  readonly shutdownGraceMs: number;
  /** Worker processes `npm start` runs (node:cluster, sharing the port); 1 serves in the process itself. */
  readonly webConcurrency: number;
  /** How often expired holds are returned to the pool; 0 turns the sweeper off. */
  readonly holdSweepIntervalMs: number;
  /** How often each instance adds the claim refusals it counted to refusal_counters (the timeline's `refused`). */
  readonly refusalFlushMs: number;
  /** How long a partner key's record is cached: the bound on a revocation made elsewhere. */
  readonly apiKeyCacheTtlMs: number;
  /** Most claims one group statement serves; 1 turns group claims off. */
  readonly claimBatchMax: number;
  /** Most first-look claim statements (alone or in groups) one process runs at once; the rest wait and go together. */
  readonly claimStatementsInFlight: number;
  /** Rate limits and the shared store for them (and, later, live updates). */
  readonly redisUrl: string | undefined;
  /** What every Redis key and channel begins with (src/redisKeys.ts); undefined: `tessera:<database name>:`. */
  readonly redisKeyPrefix: string | undefined;
  readonly rateLimit: {
    readonly pointsPerSecond: number;
    readonly burstPoints: number;
    readonly authFailuresPerMinute: number;
    /** An IPv6 client's failed authentications are counted per network of this many bits (left out: 64). */
    readonly authFailureIpv6Prefix?: number;
  };
  /** Limits applied to every GraphQL document before it runs (graphql-armor). */
  readonly graphql: {
    readonly introspection: boolean;
    readonly maxDepth: number;
    readonly maxAliases: number;
    readonly maxCost: number;
    readonly maxTokens: number;
  };
  /** Browser origins allowed to call the API cross-origin; empty: none. */
  readonly corsOrigins: readonly string[];
  /**
   * Proxies whose forwarding header names the client (TRUST_PROXY: addresses, CIDRs; none by
   * default), and which header they set (TRUST_PROXY_HEADER; undefined: whichever one is present,
   * neither when both are). src/clientAddress.ts.
   */
  readonly trustProxy: { readonly addresses: readonly string[]; readonly header: 'x-forwarded-for' | 'forwarded' | undefined };
  /** HTTP's own limits (src/http.ts, docs/SECURITY.md). */
  readonly http: HttpLimits;
  /** The WebSocket's own limits (src/ws.ts, docs/SECURITY.md). */
  readonly websocket: {
    /** The largest message an accepted socket may send (ws's maxPayload). */
    readonly maxMessageBytes: number;
    /** What a socket may send in all before its connection_init is accepted. */
    readonly maxUnauthenticatedBytes: number;
    /** Subscriptions open at once on one socket. */
    readonly maxSubscriptionsPerSocket: number;
    /** Subscriptions open at once for one key, on one instance. */
    readonly maxSubscriptionsPerKey: number;
  };
  /** When set, GET /metrics requires `Authorization: Bearer <metricsToken>`; undefined: /metrics is open. */
  readonly metricsToken: string | undefined;
  /** OpenTelemetry tracing (the OTEL_* variables: src/tracing/config.ts); null: off. */
  readonly tracing: TracingConfig | null;
  readonly webhooks: {
    /**
     * The key that seals endpoint secrets (WEBHOOK_SECRET_KEY; generated once outside production).
     * Undefined in production without the variable: webhooks are then off, and createWebhook says why.
     */
    readonly secretKey: Buffer | undefined;
    /** Production only: may endpoints be on private networks (docs/WEBHOOKS.md, src/webhooks/urlPolicy.ts). */
    readonly allowPrivateNetworks: boolean;
    /** https only, and the private-range rule (NODE_ENV=production). */
    readonly production: boolean;
  };
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Where a generated admin key is kept: beside the embedded database's folder (`.tessera/admin-api-key`). */
export const adminKeyFile = (embeddedDir: string): string => path.join(path.dirname(path.resolve(embeddedDir)), 'admin-api-key');

/**
 * Outside production a missing ADMIN_API_KEY is generated once and kept in `.tessera/admin-api-key`
 * beside the embedded database, so a restart keeps the key an operator already pasted into GraphiQL.
 */
function generatedAdminKey(embeddedDir: string): string {
  const file = adminKeyFile(embeddedDir);
  const stateDir = path.dirname(file);
  if (existsSync(file)) {
    const saved = readFileSync(file, 'utf8').trim();
    if (saved.length >= 16) return saved;
  }
  const key = `tsa_${randomBytes(24).toString('base64url')}`;
  mkdirSync(stateDir, { recursive: true });
  // Written whole under another name, then linked into place — link() fails if the file exists: of
  // several processes starting together, one key wins and every process reads that one.
  const draft = `${file}.${process.pid}`;
  writeFileSync(draft, `${key}\n`, { mode: 0o600 });
  try {
    linkSync(draft, file);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return readFileSync(file, 'utf8').trim();
  } finally {
    unlinkSync(draft);
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
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
  return Object.freeze({
    env: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST || undefined,
    databaseUrl,
    databaseDirectUrl: e.DATABASE_DIRECT_URL ? e.DATABASE_DIRECT_URL : undefined,
    adminApiKey,
    adminApiKeyGenerated: givenKey === undefined,
    database: Object.freeze({
      poolSize: e.DATABASE_POOL_SIZE,
      poolTimeoutMs: e.DATABASE_POOL_TIMEOUT_MS,
      poolMaxWaiting: e.DATABASE_POOL_MAX_WAITING,
      statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
      lockTimeoutMs: e.DATABASE_LOCK_TIMEOUT_MS,
      idleInTransactionTimeoutMs: e.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
      pooler: e.DATABASE_POOLER ? e.DATABASE_POOLER : null,
    }),
    embedded: Object.freeze({ dir: embeddedDir, port: e.EMBEDDED_PG_PORT }),
    readReplicas: Object.freeze({
      urls: Object.freeze((e.DATABASE_READ_URL ?? '').split(',').map((url) => url.trim()).filter(Boolean)),
      maxLagMs: e.READ_MAX_LAG_MS,
    }),
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    webConcurrency: e.WEB_CONCURRENCY,
    holdSweepIntervalMs: e.HOLD_SWEEP_INTERVAL_MS,
    refusalFlushMs: e.REFUSAL_FLUSH_MS,
    apiKeyCacheTtlMs: e.API_KEY_CACHE_TTL_MS,
    claimBatchMax: e.CLAIM_BATCH_MAX,
    claimStatementsInFlight: e.CLAIM_STATEMENTS_IN_FLIGHT,
    redisUrl: e.REDIS_URL ? e.REDIS_URL : undefined,
    redisKeyPrefix: e.REDIS_KEY_PREFIX ? e.REDIS_KEY_PREFIX : undefined,
    rateLimit: Object.freeze({
      pointsPerSecond: e.RATE_LIMIT_POINTS_PER_SECOND,
      burstPoints: e.RATE_LIMIT_BURST_POINTS,
      authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
      authFailureIpv6Prefix: e.AUTH_FAILURE_IPV6_PREFIX,
    }),
    graphql: Object.freeze({
      introspection: e.GRAPHQL_INTROSPECTION ? e.GRAPHQL_INTROSPECTION === 'true' : e.NODE_ENV !== 'production',
      maxDepth: e.GRAPHQL_MAX_DEPTH,
      maxAliases: e.GRAPHQL_MAX_ALIASES,
      maxCost: e.GRAPHQL_MAX_COST,
      maxTokens: e.GRAPHQL_MAX_TOKENS,
    }),
    corsOrigins: Object.freeze(splitList(e.CORS_ORIGINS)),
    trustProxy: Object.freeze({ addresses: Object.freeze(splitList(e.TRUST_PROXY)), header: e.TRUST_PROXY_HEADER || undefined }),
    http: Object.freeze({
      maxBodyBytes: Object.freeze({ partner: e.HTTP_MAX_BODY_BYTES_PARTNER, operator: e.HTTP_MAX_BODY_BYTES_OPERATOR }),
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      headersTimeoutMs: Math.min(e.HTTP_HEADERS_TIMEOUT_MS, e.HTTP_REQUEST_TIMEOUT_MS),
    }),
    websocket: Object.freeze({
      maxMessageBytes: e.WS_MAX_MESSAGE_BYTES,
      maxUnauthenticatedBytes: Math.min(e.WS_MAX_UNAUTHENTICATED_BYTES, e.WS_MAX_MESSAGE_BYTES),
      maxSubscriptionsPerSocket: e.WS_MAX_SUBSCRIPTIONS_PER_SOCKET,
      maxSubscriptionsPerKey: e.WS_MAX_SUBSCRIPTIONS_PER_KEY,
    }),
    metricsToken: e.METRICS_TOKEN ? e.METRICS_TOKEN : undefined,
    tracing,
    webhooks: Object.freeze({ secretKey: webhookSecretKey, allowPrivateNetworks: e.WEBHOOK_ALLOW_PRIVATE_NETWORKS === 'true', production }),
  });
}
