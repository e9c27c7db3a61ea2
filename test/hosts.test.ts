// DATABASE_URL listing several servers (src/db/hosts.ts, issue 19): parsed as libpq reads it; a
// pool skips a host that refuses connections and, with target_session_attrs=read-write, a standby;
// and when the primary is killed and its standby promoted, the same pool writes on the promoted
// server — no restart, no configuration change. readDurability (the start-up log's line) tells
// whether an acknowledged claim is on the standby too. Against a real primary and streaming standby.
import { createDatabase, type Database } from '../src/db/client';
import { readDurability } from '../src/db/durability';
import { parseHosts } from '../src/db/hosts';
import { migrate } from '../src/db/migrate';
import { ServerProcess } from './chaos/harness';
import { freePort } from './helpers/process';
import { startReplicaPair, type ReplicaPair } from './helpers/replica';
import { TEST_DATABASE_CONFIG } from './helpers/testServer';
import { until } from './helpers/time';

describe('parseHosts', () => {
  test('a URL with one host is kept as it is', () => {
    expect(parseHosts('postgresql://u:p@db:5432/tessera?sslmode=require')).toEqual({ urls: ['postgresql://u:p@db:5432/tessera?sslmode=require'], readWrite: false });
  });

  test('a libpq multi-host URL becomes one URL per host, in order, with the rest of the URL on each', () => {
    expect(parseHosts('postgres://u:p@a:5432,b,[::1]:6000/tessera?target_session_attrs=read-write&sslmode=require')).toEqual({
      urls: ['postgres://u:p@a:5432/tessera?sslmode=require', 'postgres://u:p@b/tessera?sslmode=require', 'postgres://u:p@[::1]:6000/tessera?sslmode=require'],
      readWrite: true,
    });
    expect(parseHosts('postgresql://a,b/db').urls).toEqual(['postgresql://a/db', 'postgresql://b/db']);
    expect(parseHosts('postgresql://a,b/db?target_session_attrs=any').readWrite).toBe(false);
  });

  test('a target_session_attrs Tessera cannot honour is refused, naming what it takes', () => {
    expect(() => parseHosts('postgresql://a,b/db?target_session_attrs=prefer-standby')).toThrow(/target_session_attrs=prefer-standby is not supported: use read-write/);
  });
});

describe('a pool on several hosts', () => {
  let pair: ReplicaPair | null;
  let db: Database | null = null;
  beforeAll(async () => {
    pair = await startReplicaPair();
    if (pair) await migrate(pair.primaryUrl);
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    pair?.stop();
  });
  const port = (url: string) => Number(new URL(url).port);
  /** Runs `sql` on the pool until it succeeds, counting the attempts that failed meanwhile. */
  const untilAnswered = async (sql: string) => {
    let failures = 0;
    const rows = await until(
      async () => {
        try {
          return (await db!.pool.query(sql)).rows;
        } catch {
          failures += 1;
          return null;
        }
      },
      { message: `${sql} to be answered`, timeoutMs: 60_000, intervalMs: 100 },
    );
    return { rows, failures };
  };

  test('skips a host that refuses connections and a standby, and works on the primary', async () => {
    if (!pair) return console.warn('skipped: no PostgreSQL binaries with pg_basebackup on this machine (set PG_BIN)');
    const closed = await freePort(); // nothing listens there
    const url = `postgresql://postgres@127.0.0.1:${closed},127.0.0.1:${port(pair.standbyUrl)},127.0.0.1:${port(pair.primaryUrl)}/postgres?target_session_attrs=read-write`;
    // Migrations (one-off connection) find the primary at once.
    expect(await migrate(url)).toEqual([]);
    db = createDatabase({ ...TEST_DATABASE_CONFIG, url });
    const first = await untilAnswered('SELECT inet_server_port() AS port, pg_is_in_recovery() AS standby');
    expect(first.rows).toEqual([{ port: port(pair.primaryUrl), standby: false }]);
    expect(first.failures).toBeLessThanOrEqual(2); // the refusing host, then the standby
    expect(await readDurability(db.pool)).toMatchObject({ standbys: 1, synchronousStandbys: 0, onTwoServers: false });
    await db.pool.query('CREATE TABLE failover_probe (n int PRIMARY KEY)');
    await db.pool.query('INSERT INTO failover_probe VALUES (1)');
    // Prisma, on the same pool, too.
    expect(await db.prisma.$queryRawUnsafe('SELECT n FROM failover_probe')).toEqual([{ n: 1 }]);
  }, 120_000);

  test('npm start with the standby listed first: the start-up checks and the durability line find the primary (issue 28)', async () => {
    if (!pair) return console.warn('skipped: no PostgreSQL binaries with pg_basebackup on this machine (set PG_BIN)');
    const url = `postgresql://postgres@127.0.0.1:${port(pair.standbyUrl)},127.0.0.1:${port(pair.primaryUrl)}/postgres?target_session_attrs=read-write`;
    const server = new ServerProcess(await freePort(), { DATABASE_URL: url, LOG_LEVEL: 'info', NODE_ENV: 'production', WEBHOOK_SECRET_KEY: Buffer.alloc(32, 1).toString('base64') });
    try {
      await server.start();
      await until(() => /claims are acknowledged once the primary has them/.test(server.log), { message: 'the durability line', timeoutMs: 20_000, intervalMs: 100 });
      expect(server.log).toMatch(/session settings in force: statement_timeout 5000ms/);
      expect(server.log).not.toMatch(/could not read the replication settings/);
    } finally {
      await server.stop();
    }
  }, 120_000);

  test('after the primary is killed and the standby promoted, the same pool writes on the promoted server', async () => {
    if (!pair || !db) return console.warn('skipped: no PostgreSQL binaries with pg_basebackup on this machine (set PG_BIN)');
    await pair.setSynchronous(true);
    expect(await readDurability(db.pool)).toMatchObject({ standbys: 1, synchronousStandbys: 1, synchronousCommit: 'on', onTwoServers: true });
    await db.pool.query('INSERT INTO failover_probe VALUES (2)'); // acknowledged: on both servers
    pair.killPrimary();
    await expect(db.pool.query('INSERT INTO failover_probe VALUES (3)')).rejects.toThrow();
    await pair.promoteStandby();
    const after = await untilAnswered('INSERT INTO failover_probe VALUES (3) RETURNING inet_server_port() AS port');
    expect(after.rows).toEqual([{ port: port(pair.standbyUrl) }]);
    expect((await db.pool.query('SELECT n FROM failover_probe ORDER BY n')).rows).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  }, 120_000);
});
