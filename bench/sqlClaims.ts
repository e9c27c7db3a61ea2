// The SQL measurements of `npm run bench`, in a database of their own (`tessera_bench_sql`, so that
// their resets touch nothing the HTTP runs count):
//
//   - the floor: the MINIMAL claim of docs/PERFORMANCE.md (strategy A) —
//       UPDATE … WHERE id = (SELECT id … ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
//         AND status = 'AVAILABLE' RETURNING id
//     on a bare ticket table with a partial index on its available rows: what PostgreSQL itself
//     does for a claim on this machine, with nothing of Tessera's.
//   - the statement alone: the second look's call of tessera_claim_tickets exactly as
//     claimStatement() of src/claim/secondLook.ts builds it — holds, claimTickets and a
//     claimTicket's second look run it;
//   - the first look alone: the call a claimTicket request that arrives alone runs first
//     (tessera_claim_one), its text and values taken from firstLookAlone() of src/claim/firstLook.ts;
//   - a group alone: the call GROUP_SIZE claimTicket requests in flight together share
//     (tessera_claim_group), taken from firstLookTogether() — what a claim costs PostgreSQL when
//     the batcher has grouped it, counted per ticket claimed;
//   both on Tessera's migrated schema — one open campaign, one partner, the holder the HTTP bench
//   uses, no idempotency key — with Tessera's connection settings (plan_cache_mode, isolation:
//   src/db/client.ts).
//
// All with pgbench (`-n -M prepared -c N -j 2 -T S`) when it is installed, else with N pg clients
// and named prepared statements in this process (which then shares the CPU with PostgreSQL). Every
// measurement starts from the same state: every ticket AVAILABLE again and a VACUUM — the minimal
// claim takes the front of its index and slows down as dead entries pile up there (pitfall 1), and
// this machine's PostgreSQL has autovacuum off.
import { Client } from 'pg';
import { loadConfig } from '../src/config';
import { firstLookAlone, firstLookTogether } from '../src/claim/firstLook';
import { claimStatement } from '../src/claim/secondLook';
import type { ClaimClient } from '../src/claim/transaction';
import { dialectOf } from '../src/db/dialect';
import { poolConfig } from '../src/db/client';
import { migrate } from '../src/db/migrate';
import { randomPickStart } from '../src/db/pickTickets';
import { ADMIN_KEY, pgbenchLoad, sqlLoad } from './harness';

export const FLOOR_CLAIM =
  "UPDATE floor_tickets SET status = 'ALLOCATED' WHERE id = (SELECT id FROM floor_tickets WHERE status = 'AVAILABLE' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) AND status = 'AVAILABLE' RETURNING id";

/** The holder of the statement's claims (the HTTP bench's claims name a holder too). */
const HOLDER = 'bench-sql';
/** pick_order runs over 0 … 2^31-2 (randomPickStart, tessera_random_pick_order). */
const PICK_ORDER_MAX = 2_147_483_646;
/** A start no other value of the statement has: its $n are the ones pgbench's `:start` replaces. */
const START_MARK = 1_234_567_891;

export interface SqlClaimResult {
  tool: 'pgbench' | 'pg';
  clients: number;
  /** Tickets actually claimed per second (counted in the table afterwards). */
  claimsPerSecond: number;
  /** Statements per second (a statement that found nothing still counts here). */
  statementsPerSecond: number;
  p50: number;
  p99: number;
  claimed: number;
  statements: number;
  failed: number;
}

export interface StatementCheck {
  /** Tickets ALLOCATED, and ACTIVE allocations: must be equal. */
  allocatedTickets: number;
  activeAllocations: number;
  /** Tickets with two live allocations: must be 0. */
  twice: number;
}

/**
 * The session settings Tessera's own connections start with (src/db/client.ts) — today
 * `-c default_transaction_isolation=read\ committed -c plan_cache_mode=force_generic_plan` — as a
 * PGOPTIONS value for pgbench and as `options` for pg.
 */
export function tesseraSessionOptions(url: string): string {
  const config = loadConfig({ DATABASE_URL: url, ADMIN_API_KEY: ADMIN_KEY, NODE_ENV: 'production' });
  const options = poolConfig({ ...config.database, url }).options;
  if (!options) throw new Error('src/db/client.ts sets no session options any more: update bench/sqlClaims.ts');
  return options;
}

/** Claims in one group statement of the group measurement. */
export const GROUP_SIZE = 8;

/** An SQL literal for one of the statement's values; the pick start, START_MARK, becomes pgbench's `:start`. */
function literal(value: unknown): string {
  if (value === START_MARK) return ':start';
  if (Array.isArray(value)) return `ARRAY[${value.map(literal).join(', ')}]`;
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'string') return `'${value.replace(/'/g, "''")}'`;
  throw new Error(`cannot write ${typeof value} ${JSON.stringify(value)} as an SQL literal for pgbench`);
}

/** The text without its `--` comments (outside quoted strings and identifiers), on one line. */
export function oneLine(text: string): string {
  let out = '';
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < text.length; i += 1) {
    const ch = text[i]!;
    if (quote) {
      out += ch;
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === '-' && text[i + 1] === '-') {
      while (i < text.length && text[i] !== '\n') i += 1;
      out += '\n';
    } else {
      out += ch;
    }
  }
  if (quote) throw new Error('unterminated quoted text in the claim statement');
  return out.replace(/\s+/g, ' ').trim();
}

/** A claim statement as PostgreSQL receives it — text with $n, values — its pick start being START_MARK. */
export interface ClaimSql {
  text: string;
  values: unknown[];
}

/** Which of Tessera's claim statements: the second look's (src/claim/secondLook.ts), the first look alone, or a group's (src/claim/firstLook.ts). */
export type Which = 'statement' | 'firstLook' | 'group';

/** The second look's statement for the bench's campaign, partner and holder. */
function statementSql(campaignId: string, partnerId: string): ClaimSql {
  return claimStatement({
    kind: 'claim',
    campaignId,
    partnerId,
    holder: HOLDER,
    metadata: null,
    idempotencyKey: null,
    requestHash: null,
    quantity: 1,
    ttlSeconds: null,
    start: START_MARK,
    wait: false,
  });
}

/**
 * The statement `send` hands to Prisma, caught on its way there: Tessera's own code builds it,
 * text and values, exactly as it would for PostgreSQL. `rows` is what the transaction answers
 * (the first look checks that it got one row per request).
 */
async function caught(name: string, rows: unknown[], send: (prisma: ClaimClient) => Promise<unknown>): Promise<ClaimSql> {
  let sent: ClaimSql | null = null;
  const catcher = {
    $queryRawUnsafe: async (text: string, ...values: unknown[]) => {
      sent = { text, values };
      return rows;
    },
    $transaction: (queries: Array<Promise<unknown>>) => Promise.all(queries),
  } as unknown as ClaimClient;
  await send(catcher);
  if (!sent) throw new Error(`${name} sent no statement: update bench/sqlClaims.ts`);
  return sent;
}

/** One request of the bench's holder in its campaign. */
const request = (campaignId: string, partnerId: string) => ({
  campaignId,
  partnerId,
  holder: HOLDER,
  metadata: null,
  idempotencyKey: null,
  requestHash: null,
  start: START_MARK,
});

/** What the catcher answers for n requests: each undecided. */
const undecided = (n: number) => Array.from({ length: n }, (_, i) => ({ ord: i + 1, verdict: 'OK', id: null }));

/** One PostgreSQL's dialect: the bench's statements are those it sends. */
const POSTGRESQL = dialectOf('postgresql');

/** The first look alone, as firstLookAlone() itself sends it. */
const firstLookSql = (campaignId: string, partnerId: string) =>
  caught('firstLookAlone()', undecided(1), (prisma) => firstLookAlone(prisma, POSTGRESQL, request(campaignId, partnerId)));

/** The group's call for GROUP_SIZE claims of the bench's holder in its one campaign, as firstLookTogether() itself sends it. */
const groupSql = (campaignId: string, partnerId: string) =>
  caught('firstLookTogether()', undecided(GROUP_SIZE), (prisma) => firstLookTogether(prisma, POSTGRESQL, Array.from({ length: GROUP_SIZE }, () => request(campaignId, partnerId))));

/** The values of one execution: the pick start drawn anew (one per execution, wherever it appears). */
const valuesWithStart = (s: ClaimSql) => {
  const start = randomPickStart();
  return s.values.map((v) => (v === START_MARK ? start : Array.isArray(v) ? v.map((x) => (x === START_MARK ? start : x)) : v));
};

/**
 * The pgbench script of a claim statement: its text, comments stripped and lines joined, every $n
 * replaced by its value as a literal, and the random pick start by `:start`, a pgbench variable
 * drawn anew for every transaction.
 */
export function pgbenchScript(s: ClaimSql): string {
  const { text, values } = s;
  if (!values.flat().includes(START_MARK)) throw new Error('the claim statement has no parameter for its pick start any more: update bench/sqlClaims.ts');
  const sql = oneLine(text).replace(/\$(\d+)\b/g, (_, n: string) => {
    const i = Number(n) - 1;
    if (i < 0 || i >= values.length) throw new Error(`the claim statement names $${n} but has ${values.length} values`);
    return literal(values[i]);
  });
  return `\\set start random(0, ${PICK_ORDER_MAX})\n${sql};\n`;
}

export class SqlClaims {
  private campaignId = '';
  private partnerId = '';
  readonly sessionOptions: string;
  private constructor(
    readonly url: string,
    private readonly sql: Client,
    readonly tool: 'pgbench' | 'pg',
    private readonly floorRows: number,
    private readonly statementRows: number,
  ) {
    this.sessionOptions = tesseraSessionOptions(url);
  }

  /** Drops and creates `tessera_bench_sql` on `serverUrl`'s server, migrates it, fills both tables. */
  static async create(serverUrl: string, o: { floorRows: number; statementRows: number; pgbench: boolean }): Promise<SqlClaims> {
    const url = new URL(serverUrl);
    url.pathname = '/tessera_bench_sql';
    const admin = new Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query('DROP DATABASE IF EXISTS tessera_bench_sql WITH (FORCE)');
    await admin.query('CREATE DATABASE tessera_bench_sql');
    await admin.end();
    await migrate(url.toString());
    const sql = new Client({ connectionString: url.toString() });
    await sql.connect();
    const self = new SqlClaims(url.toString(), sql, o.pgbench ? 'pgbench' : 'pg', o.floorRows, o.statementRows);
    await self.setUp();
    return self;
  }

  private async setUp(): Promise<void> {
    const { sql } = this;
    await sql.query(`CREATE TABLE floor_tickets (id bigint PRIMARY KEY, code text NOT NULL, status text NOT NULL DEFAULT 'AVAILABLE')`);
    await sql.query(`INSERT INTO floor_tickets (id, code) SELECT i, 'F-' || i FROM generate_series(1, $1::int) i`, [this.floorRows]);
    await sql.query(`CREATE INDEX floor_tickets_available ON floor_tickets (id) WHERE status = 'AVAILABLE'`);
    this.partnerId = (
      await sql.query(`INSERT INTO partners (name, key_prefix, key_hash) VALUES ('bench-sql', 'tsp_benchsql', repeat('0', 64)) RETURNING id`)
    ).rows[0].id;
    this.campaignId = (await sql.query(`INSERT INTO campaigns (name, status, opened_at) VALUES ('statement alone', 'OPEN', now()) RETURNING id`)).rows[0].id;
    await sql.query(`INSERT INTO tickets (campaign_id, code) SELECT $1, 'S-' || lpad(i::text, 8, '0') FROM generate_series(1, $2::int) i`, [
      this.campaignId,
      this.statementRows,
    ]);
    await sql.query('VACUUM ANALYZE');
  }

  /** The statement `which` for this database's campaign and partner. */
  async claimSql(which: Which): Promise<ClaimSql> {
    if (which === 'statement') return statementSql(this.campaignId, this.partnerId);
    return which === 'firstLook' ? firstLookSql(this.campaignId, this.partnerId) : groupSql(this.campaignId, this.partnerId);
  }

  /**
   * `measure`, again from its reset when a connection was refused because the shared server was
   * full (someone took the slots between slotsFor() and pgbench's connections): up to 5 tries.
   */
  private async retried<T>(measure: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await measure();
      } catch (error) {
        if (attempt >= 5 || !/too many clients/.test(String(error))) throw error;
        console.log(`  (the server had no connection slot left for every client; again in 5 s, try ${attempt + 1} of 5)`);
        await new Promise((resolve) => setTimeout(resolve, 5_000));
      }
    }
  }

  /** The minimal claim at `clients`, from a fresh table (every row AVAILABLE, VACUUMed). */
  floor(clients: number, seconds: number): Promise<SqlClaimResult> {
    return this.retried(() => this.floorOnce(clients, seconds));
  }

  /** One of Tessera's claim statements alone at `clients`, from a fresh pool (tickets AVAILABLE, allocations and counters emptied, VACUUMed). */
  statement(which: Which, clients: number, seconds: number): Promise<SqlClaimResult & { check: StatementCheck }> {
    return this.retried(() => this.statementOnce(which, clients, seconds));
  }

  /**
   * The minimal claim at `rate` a second, offered by `clients` (pgbench -R), from a fresh table;
   * null without pgbench (this process would have to be the load, at a fixed rate: not written).
   */
  floorAtRate(clients: number, seconds: number, rate: number): Promise<SqlClaimResult | null> {
    if (this.tool !== 'pgbench') return Promise.resolve(null);
    return this.retried(() => this.floorOnce(clients, seconds, rate));
  }

  private async floorOnce(clients: number, seconds: number, rate?: number): Promise<SqlClaimResult> {
    await this.sql.query(`UPDATE floor_tickets SET status = 'AVAILABLE' WHERE status <> 'AVAILABLE'`);
    await this.sql.query('VACUUM ANALYZE floor_tickets');
    const run = await this.load(clients, seconds, `${FLOOR_CLAIM};\n`, FLOOR_CLAIM, () => [], undefined, rate);
    const claimed = (await this.sql.query(`SELECT count(*)::int AS n FROM floor_tickets WHERE status = 'ALLOCATED'`)).rows[0].n as number;
    if (claimed >= this.floorRows) throw new Error(`the floor's table ran dry (${claimed} of ${this.floorRows} claimed): give it more rows`);
    return this.result(clients, run, claimed);
  }

  private async statementOnce(which: Which, clients: number, seconds: number): Promise<SqlClaimResult & { check: StatementCheck }> {
    const { sql } = this;
    await sql.query('TRUNCATE allocations, campaign_counters, partner_counters, minute_counters, partner_quota_credits');
    // campaign_counters also held the pool's size (kept by the tickets' insert trigger): put it back.
    await sql.query('INSERT INTO campaign_counters (campaign_id, slot, total) VALUES ($1, 0, $2)', [this.campaignId, this.statementRows]);
    await sql.query(`UPDATE tickets SET status = 'AVAILABLE' WHERE status <> 'AVAILABLE'`);
    await sql.query(`UPDATE campaigns SET sold_out_at = NULL`);
    await sql.query('VACUUM ANALYZE tickets, allocations, campaigns, campaign_counters, partner_counters, minute_counters, partner_quota_credits');
    const claim = await this.claimSql(which);
    const run = await this.load(clients, seconds, pgbenchScript(claim), claim.text, () => valuesWithStart(claim), this.sessionOptions);
    const check = (
      await sql.query<StatementCheck>(
        `SELECT (SELECT count(*) FROM tickets WHERE status = 'ALLOCATED')::int AS "allocatedTickets",
                (SELECT count(*) FROM allocations WHERE status = 'ACTIVE')::int AS "activeAllocations",
                (SELECT count(*) FROM (SELECT 1 FROM allocations WHERE status IN ('HELD', 'ACTIVE')
                                        GROUP BY campaign_id, ticket_id HAVING count(*) > 1) d)::int AS twice`,
      )
    ).rows[0]!;
    if (check.activeAllocations >= this.statementRows) throw new Error(`the statement's pool ran dry (${check.activeAllocations} of ${this.statementRows}): give it more tickets`);
    return { ...this.result(clients, run, check.activeAllocations), check };
  }

  /**
   * Waits (up to 60 s) until the server has `clients` connection slots free — it is shared, and
   * 64 clients are most of a default max_connections of 100 — and fails saying who holds them.
   */
  private async slotsFor(clients: number): Promise<void> {
    const deadline = performance.now() + 60_000;
    for (;;) {
      const { rows } = await this.sql.query<{ max: number; used: number; holders: string }>(
        `SELECT current_setting('max_connections')::int AS max, count(*)::int AS used,
                string_agg(DISTINCT coalesce(datname, '?') || '/' || coalesce(nullif(application_name, ''), '?'), ', ') AS holders
           FROM pg_stat_activity WHERE backend_type = 'client backend'`,
      );
      const { max, used, holders } = rows[0]!;
      if (max - used >= clients) return;
      if (performance.now() > deadline) {
        throw new Error(`${clients} clients need ${clients} free connections, but ${used} of max_connections ${max} are in use (database/application: ${holders})`);
      }
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }

  private async load(clients: number, seconds: number, script: string, text: string, params: () => unknown[], options: string | undefined, rate?: number) {
    await this.slotsFor(clients);
    if (this.tool === 'pgbench') {
      const r = await pgbenchLoad({ url: this.url, clients, seconds, script, env: options ? { PGOPTIONS: options } : {}, ...(rate ? { rate } : {}) });
      return { statements: r.transactions, perSecond: r.tps, p50: r.p50, p99: r.p99, failed: r.failed };
    }
    const r = await sqlLoad({ url: this.url, connections: clients, seconds, text, params, ...(options ? { options } : {}) });
    return { statements: r.requests, perSecond: r.requestsPerSecond, p50: r.p50, p99: r.p99, failed: r.errors };
  }

  private result(clients: number, run: { statements: number; perSecond: number; p50: number; p99: number; failed: number }, claimed: number): SqlClaimResult {
    return {
      tool: this.tool,
      clients,
      claimsPerSecond: run.statements > 0 ? (run.perSecond * claimed) / run.statements : 0,
      statementsPerSecond: run.perSecond,
      p50: run.p50,
      p99: run.p99,
      claimed,
      statements: run.statements,
      failed: run.failed,
    };
  }

  /** Closes the connection and drops the database. */
  async drop(serverUrl: string): Promise<void> {
    await this.sql.end();
    const admin = new Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query('DROP DATABASE IF EXISTS tessera_bench_sql WITH (FORCE)');
    await admin.end();
  }
}
