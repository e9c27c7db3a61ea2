// What `npm start` prints when it cannot start: one short paragraph that says what to change and
// names the variable, never a stack trace (unless LOG_LEVEL=debug). Each case has a test in
// test/startup.test.ts, or, behind PgBouncer, test/pooler/pgbouncer.pooler.ts and
// test/pgbouncerRoleSettings.test.ts.
import { ConfigError } from './config';
import { EmbeddedPostgresError } from './db/embedded';
import { PG } from './db/pgErrors';
import { PoolerWithoutDirectUrlError } from './db/pooler';
import { SessionSettingsError } from './db/sessionSettings';

/** A failure to listen on PORT, with the port it was for. */
export class ListenError extends Error {
  override name = 'ListenError';
  constructor(
    readonly port: number,
    readonly host: string | undefined,
    options: { cause: unknown },
  ) {
    super(`could not listen on port ${port}`, options);
  }
}

/** The pool's first query failed although the migrations (on the same or the direct URL) ran. */
export class PoolCheckError extends Error {
  override name = 'PoolCheckError';
  constructor(
    readonly pooler: 'pgbouncer' | 'none',
    options: { cause: unknown },
  ) {
    super(`the connection pool could not run a query: ${(options.cause as Error)?.message ?? String(options.cause)}`, options);
  }
}

interface Located {
  code?: string;
  errno?: number;
  syscall?: string;
  hostname?: string;
  address?: string;
  port?: number;
  message?: string;
  cause?: unknown;
}

/** The first error in a chain of causes that has a `code` (pg, node:net and Prisma errors alike). */
function coded(error: unknown): Located | undefined {
  for (let current = error, depth = 0; current && typeof current === 'object' && depth < 6; depth += 1) {
    const e = current as Located;
    if (typeof e.code === 'string') return e;
    current = e.cause;
  }
  return undefined;
}

/** Host, port and database of a postgres URL, for messages (never the password). */
function target(url: string | undefined): { host: string; port: string; user: string; database: string; where: string } {
  try {
    const u = new URL(url ?? '');
    const host = decodeURIComponent(u.hostname) || 'localhost';
    const port = u.port || '5432';
    const database = decodeURIComponent(u.pathname.replace(/^\//, '')) || decodeURIComponent(u.username) || 'postgres';
    return { host, port, user: decodeURIComponent(u.username) || 'postgres', database, where: `${host}:${port}` };
  } catch {
    return { host: '?', port: '?', user: '?', database: '?', where: 'the server in DATABASE_URL' };
  }
}

const quote = (value: string) => (/^[\w.-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`);

/**
 * Advice for a start-up failure. `databaseUrl` is the URL Tessera tried (DATABASE_URL), undefined
 * when it used the embedded database.
 */
export function startupAdvice(error: unknown, databaseUrl: string | undefined): string {
  if (error instanceof ConfigError || error instanceof EmbeddedPostgresError || error instanceof PoolerWithoutDirectUrlError || error instanceof SessionSettingsError) return error.message;
  if (error instanceof PoolCheckError) {
    const cause = coded(error.cause);
    return (
      `Tessera's connections through DATABASE_URL cannot run a query (${cause?.code ? `${cause.code} ` : ''}${cause?.message ?? String(error.cause)}), ` +
      (error.pooler === 'pgbouncer'
        ? 'though migrations ran on DATABASE_DIRECT_URL. Check PgBouncer: its [databases] entry for this database, auth, and pool_mode = transaction (docs/SCALING.md, "Deployment").'
        : 'though migrations ran. If DATABASE_URL points at a connection pooler, set DATABASE_POOLER=pgbouncer and DATABASE_DIRECT_URL (docs/SCALING.md, "Deployment").')
    );
  }
  if (error instanceof ListenError) {
    const code = coded(error.cause)?.code;
    const where = error.host ? `${error.host}:${error.port}` : `port ${error.port}`;
    if (code === 'EADDRINUSE') return `Cannot serve on ${where}: another program is already listening there. Stop it, or set PORT to a free port (e.g. PORT=4001 npm start).`;
    if (code === 'EACCES') return `Cannot serve on ${where}: this user may not listen on it (ports below 1024 need privileges). Set PORT to 1024 or above.`;
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return `Cannot serve on ${where}: HOST is not an address of this machine. Unset HOST, or set it to one of this machine's addresses.`;
    return `Cannot serve on ${where}: ${coded(error.cause)?.message ?? String(error.cause)}. Check PORT and HOST.`;
  }
  const e = coded(error);
  const db = target(databaseUrl);
  const source = databaseUrl ? 'DATABASE_URL' : 'the embedded PostgreSQL (EMBEDDED_PG_PORT)';
  switch (e?.code) {
    case 'ECONNREFUSED':
      return `Cannot reach PostgreSQL at ${db.where}: nothing accepts connections there. Start PostgreSQL, or correct the host and port in ${source}.`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `Cannot reach PostgreSQL: the host "${db.host}" in ${source} is unknown. Correct the host in DATABASE_URL.`;
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `Cannot reach PostgreSQL at ${db.where}: no answer (${e.code}). Check the host and port in ${source}, and any firewall between.`;
    case 'ECONNRESET':
      return `PostgreSQL at ${db.where} closed the connection at once. Check that ${source} names a PostgreSQL server and whether it requires SSL (add ?sslmode=require to DATABASE_URL).`;
    case PG.INVALID_PASSWORD:
    case PG.INVALID_AUTHORIZATION:
      return `PostgreSQL at ${db.where} refused the user "${db.user}": wrong password, or no such user. Correct the user and password in DATABASE_URL.`;
    case PG.INVALID_CATALOG_NAME:
      return `The database "${db.database}" does not exist on the PostgreSQL at ${db.where}. Create it (createdb -h ${db.host} -p ${db.port} -U ${quote(db.user)} ${quote(db.database)}), or name an existing one in DATABASE_URL.`;
    case PG.CANNOT_CONNECT_NOW:
      return `PostgreSQL at ${db.where} is starting up or shutting down; try again in a moment.`;
    case PG.TOO_MANY_CONNECTIONS:
      return `PostgreSQL at ${db.where} has no connection slot left (max_connections). Lower DATABASE_POOL_SIZE or WEB_CONCURRENCY, or raise max_connections.`;
    default:
      return `Tessera failed to start: ${error instanceof Error ? error.message : String(error)}`;
  }
}
