// How every claim statement runs (claimOne.ts, claimGroup.ts, claimTicket.ts): raw SQL, alone in a
// Prisma batch transaction — BEGIN, the statement, COMMIT on one pooled connection — as the design
// says. The statement is the whole claim (gate, pick, take, allocations, counters, events), so the
// transaction adds no decision of its own: it is the unit PgBouncer's transaction mode pools, and the
// place a later step of the same claim would join. Straight to PostgreSQL the statement is a named
// prepared statement of its connection (client.ts's statementNameGenerator); behind PgBouncer it is
// planned at each call (docs/DESIGN.md, "The claim in $transaction", has the figures).
//
// One step joins it on Citus, for a claim with an idempotency key: a partner's key names one claim in
// every campaign, and the campaigns' allocations live on different nodes, where the gate — run on the
// node holding the claim's campaign — sees only that campaign's (tessera_claim_gate). So the
// coordinator first takes the key's lock and looks in the other campaigns (tessera_prior_claim), in
// the same transaction: a key used elsewhere answers PRIOR, as the gate does on one PostgreSQL.
import type { PrismaClient } from '../generated/prisma/client';

export type ClaimClient = Pick<PrismaClient, '$transaction' | '$queryRawUnsafe'>;

/**
 * Where a keyed claim's key is checked against the partner's other campaigns: `in-gate` (one
 * PostgreSQL: the gate looks in every campaign) or `coordinator-first` (Citus: see above).
 */
export type KeyCheck = 'in-gate' | 'coordinator-first';

/** The KeyCheck of a deployment: the coordinator's on Citus, the gate's elsewhere. */
export const keyCheckOf = (options: { citus?: boolean }): KeyCheck => (options.citus ? 'coordinator-first' : 'in-gate');

export interface ClaimKey {
  keys: KeyCheck;
  campaignId: string;
  partnerId: string;
  idempotencyKey: string | null;
}

/** The statement's row when the key's claim is in another campaign: PRIOR, nothing else. */
const PRIOR_ELSEWHERE = { ord: 1, verdict: 'PRIOR', id: null } as const;

export async function inTransaction<T>(prisma: ClaimClient, statement: { text: string; values: readonly unknown[] }, key?: ClaimKey): Promise<T[]> {
  if (key?.keys !== 'coordinator-first' || key.idempotencyKey === null) {
    const [rows] = await prisma.$transaction([prisma.$queryRawUnsafe<T[]>(statement.text, ...statement.values)]);
    return rows;
  }
  const { campaignId, partnerId, idempotencyKey } = key;
  return prisma.$transaction(
    async (tx) => {
      const prior = await tx.$queryRawUnsafe<{ prior_campaign_id: string; prior_allocation_id: string }[]>(
        'SELECT * FROM tessera_prior_claim($1::uuid, $2::uuid, $3::text)',
        campaignId,
        partnerId,
        idempotencyKey,
      );
      if (prior.length > 0) return [{ ...PRIOR_ELSEWHERE, ...prior[0]! } as T];
      return tx.$queryRawUnsafe<T[]>(statement.text, ...statement.values);
    },
    // A claim's own limits are the statement timeouts of the session (sessionSettings.ts); these only
    // keep Prisma's defaults (2 s for a connection, 5 s in all) from cutting a slow claim short.
    { maxWait: 60_000, timeout: 120_000 },
  );
}
