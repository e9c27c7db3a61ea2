// The campaign gate, exclusive side. Claims, holds, confirmations, releases and the sweeper take it
// SHARED (tessera_claim_gate, and the statements in this folder); the operations that change what a
// claim may do — close, update, setting a quota — take it EXCLUSIVE, in a transaction with their
// write: they wait for the statements already past the gate, and PostgreSQL's lock manager queues
// every new shared request behind them (docs/CORRECTNESS.md §4: never starved). The key pairs with
// tessera_claim_gate's `pg_advisory_xact_lock_shared(1, hashtext(campaign_id::text))`.
import type { Prisma } from '../generated/prisma/client';
import type { Db } from './client';

// Advisory locks are per node. Claims take the gate inside their statements, which on Citus run on
// the node holding the campaign's shards; so the exclusive side names a table of the campaign's too
// (an index probe of campaign_counters, whatever it finds): on Citus the statement is routed to that
// node, CTE and all, and the lock is taken there; on one server the probe costs next to nothing.
export function lockCampaignGate(db: Db, campaignId: string): Prisma.PrismaPromise<number> {
  return db.$executeRaw`
    WITH gate AS MATERIALIZED (SELECT pg_advisory_xact_lock(1, hashtext(${campaignId}::uuid::text)) AS locked)
    SELECT g.locked FROM gate g
      LEFT JOIN (SELECT 1 FROM campaign_counters c WHERE c.campaign_id = ${campaignId}::uuid LIMIT 1) shard ON true`;
}

/** A client that can run a batch transaction (the root Prisma client). */
export type Batchable = Db & {
  $transaction<P extends Prisma.PrismaPromise<unknown>[]>(statements: [...P]): Promise<unknown[]>;
};
