// How every claim statement runs (claimOne.ts, claimGroup.ts, claimTicket.ts): raw SQL, alone in a
// Prisma batch transaction — BEGIN, the statement, COMMIT on one pooled connection — as the design
// says. The statement is the whole claim (gate, pick, take, allocations, counters, events), so the
// transaction adds no decision of its own: it is the unit PgBouncer's transaction mode pools, and the
// place a later step of the same claim would join. Straight to PostgreSQL the statement is a named
// prepared statement of its connection (client.ts's statementNameGenerator); behind PgBouncer it is
// planned at each call (docs/DESIGN.md, "The claim in $transaction", has the figures).
import type { PrismaClient } from '../generated/prisma/client';

export type ClaimClient = Pick<PrismaClient, '$transaction' | '$queryRawUnsafe'>;

export async function inTransaction<T>(prisma: ClaimClient, statement: { text: string; values: readonly unknown[] }): Promise<T[]> {
  const [rows] = await prisma.$transaction([prisma.$queryRawUnsafe<T[]>(statement.text, ...statement.values)]);
  return rows;
}
