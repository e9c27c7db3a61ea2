// PostgreSQL error codes Tessera reacts to, by name (https://www.postgresql.org/docs/current/errcodes-appendix.html),
// and how to read them from what Prisma throws: its pg adapter keeps the original code and the
// violated constraint in `meta.driverAdapterError.cause`.
export const PG = {
  UNIQUE_VIOLATION: '23505',
  FOREIGN_KEY_VIOLATION: '23503',
  CHECK_VIOLATION: '23514',
  INVALID_TEXT_REPRESENTATION: '22P02',
  SERIALIZATION_FAILURE: '40001',
  DEADLOCK_DETECTED: '40P01',
  LOCK_NOT_AVAILABLE: '55P03', // lock_timeout
  QUERY_CANCELED: '57014', // statement_timeout
  IDLE_IN_TRANSACTION_TIMEOUT: '25P03',
  ADMIN_SHUTDOWN: '57P01', // pg_terminate_backend, server shutting down
  CRASH_SHUTDOWN: '57P02',
  CANNOT_CONNECT_NOW: '57P03',
  TOO_MANY_CONNECTIONS: '53300',
  INVALID_PASSWORD: '28P01',
  INVALID_AUTHORIZATION: '28000', // e.g. no such role
  INVALID_CATALOG_NAME: '3D000', // no such database
  INTERNAL_ERROR: 'XX000', // e.g. Citus's report of a worker's error during COPY
} as const;

export interface PgErrorInfo {
  /** SQLSTATE, when the error came from PostgreSQL. */
  readonly code?: string;
  /** The violated constraint or index, for constraint violations. */
  readonly constraint?: string;
  /** The adapter's classification (e.g. ConnectionClosed, DatabaseNotReachable). */
  readonly kind?: string;
}

interface AdapterCause {
  originalCode?: string;
  code?: string;
  kind?: string;
  constraint?: { index?: string };
}

/** Reads the PostgreSQL error behind an error thrown by Prisma, pg, or the pg adapter. */
export function pgErrorInfo(error: unknown): PgErrorInfo {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth += 1) {
    const e = current as {
      code?: unknown;
      constraint?: unknown;
      severity?: unknown;
      meta?: { driverAdapterError?: { cause?: AdapterCause } };
      cause?: unknown;
    };
    // Prisma wraps the adapter's error in meta; the adapter's own DriverAdapterError has it in cause.
    const adapterCause = e.meta?.driverAdapterError?.cause ?? (typeof (e as AdapterCause).kind === 'string' ? (e as AdapterCause) : undefined);
    if (adapterCause) {
      return {
        code: adapterCause.originalCode ?? (adapterCause.code !== 'N/A' ? adapterCause.code : undefined),
        constraint: adapterCause.constraint?.index,
        kind: adapterCause.kind,
      };
    }
    if (typeof e.code === 'string' && typeof e.severity === 'string') {
      return { code: e.code, constraint: typeof e.constraint === 'string' ? e.constraint : undefined };
    }
    current = e.cause;
  }
  return {};
}

const TRANSIENT_CODES = new Set<string>([
  PG.SERIALIZATION_FAILURE,
  PG.DEADLOCK_DETECTED,
  PG.LOCK_NOT_AVAILABLE,
  PG.QUERY_CANCELED,
  PG.IDLE_IN_TRANSACTION_TIMEOUT,
  PG.ADMIN_SHUTDOWN,
  PG.CRASH_SHUTDOWN,
  PG.CANNOT_CONNECT_NOW,
  PG.TOO_MANY_CONNECTIONS,
]);
const TRANSIENT_KINDS = new Set(['ConnectionClosed', 'DatabaseNotReachable', 'SocketTimeout', 'TooManyConnections']);
/** Prisma's own codes for "no connection / transaction timed out or closed". */
const TRANSIENT_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1017', 'P2024', 'P2028']);

/**
 * True when the operation failed for a reason that says nothing about the request: the client may
 * retry it (with its idempotency key, for a claim). Answered as UNAVAILABLE, never as a 500.
 */
export function isTransientDbError(error: unknown): boolean {
  const info = pgErrorInfo(error);
  if (info.code && TRANSIENT_CODES.has(info.code)) return true;
  if (info.kind && TRANSIENT_KINDS.has(info.kind)) return true;
  const e = error as { code?: unknown; message?: unknown } | null;
  if (e && typeof e.code === 'string' && TRANSIENT_PRISMA_CODES.has(e.code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /timeout exceeded when trying to connect|Connection terminated|not queryable|ECONNREFUSED|ECONNRESET|Transaction already closed|Unable to start a transaction/i.test(message);
}

/**
 * True when the connection died under the statement (terminated backend, restart, reset): the
 * statement may or may not have committed. Safe to retry only where a retry cannot allocate twice,
 * i.e. for a claim with an idempotency key.
 */
export function isConnectionLost(error: unknown): boolean {
  if (isConnectTimeout(error)) return false; // never connected: nothing was sent
  const info = pgErrorInfo(error);
  if (info.code === PG.ADMIN_SHUTDOWN || info.code === PG.CRASH_SHUTDOWN || info.code === PG.CANNOT_CONNECT_NOW) return true;
  if (info.kind === 'ConnectionClosed' || info.kind === 'DatabaseNotReachable') return true;
  const message = error instanceof Error ? error.message : '';
  const prismaCode = (error as { code?: unknown } | null)?.code;
  if (prismaCode === 'P1017' || prismaCode === 'P1001') return true; // server closed the connection / unreachable
  return /Connection terminated|not queryable|ECONNRESET|ECONNREFUSED|server closed the connection/i.test(message);
}

/**
 * True when no connection could be made in time (pg's connect timeout, pg-pool's acquire timeout):
 * nothing was sent, so nothing happened — and asking again at once would wait as long again.
 */
export function isConnectTimeout(error: unknown): boolean {
  const message = error instanceof Error ? error.message : '';
  return /due to connection timeout|timeout exceeded when trying to connect/i.test(message);
}

/** Runs `run`, again up to `retries` times after a deadlock (a victim was rolled back: always safe to ask again). */
export async function retryDeadlocks<T>(run: () => Promise<T>, retries = 2): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await run();
    } catch (error) {
      if (pgErrorInfo(error).code !== PG.DEADLOCK_DETECTED || attempt >= retries) throw error;
    }
  }
}
