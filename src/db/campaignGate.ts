// The campaign gate, exclusive side. Claims, holds, confirmations, releases and the sweeper take it
// SHARED (tessera_claim_gate, and the statements in this folder); the operations that change what a
// claim may do — close, update, setting a quota — take it EXCLUSIVE, in a transaction with their
// write: they wait for the statements already past the gate, and PostgreSQL's lock manager queues
// every new shared request behind them (docs/CORRECTNESS.md §4: never starved). The key pairs with
// tessera_claim_gate's `tessera_lock('campaign', campaign_id::text, true)`.
import type { Prisma } from '../generated/prisma/client';
import type { Db } from './client';

// Two statements, on every deployment: the lock on the server Tessera talks to, then the same lock
// through tessera_lock_campaign_gate. On one PostgreSQL the second takes again what the first holds.
// On Citus the first look's gate runs on the node holding the campaign (its function is delegated
// there, src/db/distribute.ts) and the other statements' gates on the coordinator: the first lock
// covers those, the function — delegated to the same node — the first look (test/citus/ checks that
// a close waits for a claim in flight).
export function lockCampaignGate(db: Db, campaignId: string): [Prisma.PrismaPromise<number>, Prisma.PrismaPromise<number>] {
  return [
    db.$executeRaw`SELECT tessera_lock('campaign', ${campaignId}::uuid::text)`,
    db.$executeRaw`SELECT tessera_lock_campaign_gate(${campaignId}::uuid)`,
  ];
}

/** A client that can run a batch transaction (the root Prisma client). */
export type Batchable = Db & {
  $transaction<P extends Prisma.PrismaPromise<unknown>[]>(statements: [...P]): Promise<unknown[]>;
};
