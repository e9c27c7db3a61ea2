// How every claim call runs: raw SQL, alone in a Prisma batch transaction — which Prisma sends as
// the statement alone on one pooled connection, without BEGIN or COMMIT (a single statement is its
// own transaction in PostgreSQL). The call is the whole claim, so the transaction adds no decision of
// its own: it is the unit PgBouncer's transaction mode pools. Straight to PostgreSQL the statement
// is a named prepared statement of its connection; behind PgBouncer the functions' cached plans
// keep it cheap.
//
// One step joins it where the dialect's keyCheck is 'coordinator-first' (Citus), for a claim with
// an idempotency key: a partner's key names one claim in every campaign, and the campaigns'
// allocations live on different nodes, where the gate — run on the node holding the claim's
// campaign — sees only that campaign's. So the coordinator first takes the key's lock and looks in
// the other campaigns (tessera_prior_claim), in the same transaction: a key used elsewhere answers
// PRIOR, as the gate does on one PostgreSQL.
import type { PrismaClient } from '../generated/prisma/client';
import type { Dialect } from '../db/dialect';
import { inStatement, type Span } from '../tracing';

export type ClaimClient = Pick<PrismaClient, '$transaction' | '$queryRawUnsafe'>;

/** Where a keyed claim's key is checked against the partner's other campaigns (Dialect.keyCheck). */
export type KeyCheck = Dialect['keyCheck'];

export interface ClaimKey {
  keys: KeyCheck;
  campaignId: string;
  partnerId: string;
  idempotencyKey: string | null;
}

/** A keyed request's allocation in another campaign, found by the coordinator (tessera_prior_claim). */
interface PriorElsewhere {
  ord: number;
  prior_campaign_id: string;
  prior_allocation_id: string;
}

/** The statement's row for a request whose key's claim is in another campaign: PRIOR, nothing else. */
const priorRow = <T>(ord: number, prior: PriorElsewhere): T => ({ ord, verdict: 'PRIOR', id: null, prior_campaign_id: prior.prior_campaign_id, prior_allocation_id: prior.prior_allocation_id }) as T;

// A claim's own limits are the statement timeouts of the session (db/sessionSettings.ts); these only
// keep Prisma's defaults (2 s for a connection, 5 s in all) from cutting a slow claim short.
const INTERACTIVE = { maxWait: 60_000, timeout: 120_000 };

type Tx = Pick<PrismaClient, '$queryRawUnsafe'>;

/** tessera_prior_claim for these requests: the keys locked, and the allocations of theirs found in other campaigns, by ord. */
async function priorsElsewhere(
  tx: Tx,
  campaignId: string,
  requests: readonly { partnerId: string; idempotencyKey: string | null }[],
  trace: Span | undefined,
): Promise<Map<number, PriorElsewhere>> {
  const rows = await inStatement(trace, 'priorClaim', () =>
    tx.$queryRawUnsafe<PriorElsewhere[]>(
      'SELECT * FROM tessera_prior_claim($1::uuid, $2::uuid[], $3::text[])',
      campaignId,
      requests.map((r) => r.partnerId),
      requests.map((r) => r.idempotencyKey),
    ).then((found) => found),
  );
  return new Map(rows.map((r) => [Number(r.ord), r]));
}

/** A claim statement: its name (a span's name when tracing is on), text and values. */
export interface ClaimStatement {
  name: string;
  text: string;
  values: readonly unknown[];
}

/** Runs `statement` in `tx`, its span (when tracing) named by it. */
const run = <T>(tx: Tx, statement: ClaimStatement, trace: Span | undefined): Promise<T[]> =>
  inStatement(trace, statement.name, () => tx.$queryRawUnsafe<T[]>(statement.text, ...statement.values).then((rows) => rows));

/** Runs `statement` in its transaction; `trace`: the span its statements' spans go under (tracing on). */
export async function inTransaction<T>(prisma: ClaimClient, statement: ClaimStatement, key?: ClaimKey, trace?: Span): Promise<T[]> {
  if (key?.keys !== 'coordinator-first' || key.idempotencyKey === null) {
    const [rows] = await inStatement(trace, statement.name, () => prisma.$transaction([prisma.$queryRawUnsafe<T[]>(statement.text, ...statement.values)]).then((done) => done));
    return rows;
  }
  return prisma.$transaction(async (tx) => {
    const prior = (await priorsElsewhere(tx, key.campaignId, [key], trace)).get(1);
    if (prior) return [priorRow<T>(1, prior)];
    return run<T>(tx, statement, trace);
  }, INTERACTIVE);
}

/**
 * A group of one campaign's requests (firstLook.ts): `statementFor` makes the
 * statement for some of them, whose rows answer them in order (`ord` from 1). With `coordinator-first`
 * keys, the requests whose key has its claim in another campaign are answered PRIOR here and left out
 * of the statement; rows come back renumbered in the requests' order.
 */
export async function groupInTransaction<T extends { ord: number | string }, R extends { partnerId: string; idempotencyKey: string | null }>(
  prisma: ClaimClient,
  campaignId: string,
  requests: readonly R[],
  statementFor: (some: readonly R[]) => ClaimStatement,
  keys: KeyCheck,
  trace?: Span,
): Promise<T[]> {
  if (keys !== 'coordinator-first' || requests.every((r) => r.idempotencyKey === null)) {
    const statement = statementFor(requests);
    const [rows] = await inStatement(trace, statement.name, () => prisma.$transaction([prisma.$queryRawUnsafe<T[]>(statement.text, ...statement.values)]).then((done) => done));
    return rows;
  }
  return prisma.$transaction(async (tx) => {
    const priors = await priorsElsewhere(tx, campaignId, requests, trace);
    const rest = requests.filter((_, i) => !priors.has(i + 1));
    const statement = statementFor(rest);
    const rows = rest.length === 0 ? [] : await run<T>(tx, statement, trace);
    let next = 0;
    return requests.map((_, i) => {
      const prior = priors.get(i + 1);
      return prior ? priorRow<T>(i + 1, prior) : { ...rows[next++]!, ord: i + 1 };
    });
  }, INTERACTIVE);
}
