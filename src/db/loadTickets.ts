// Loading tickets: one INSERT per call, so a call is atomic. ON CONFLICT DO NOTHING skips codes
// already in the campaign and codes repeated within the call (PostgreSQL sees its own inserts
// within the statement); the caller counts what was skipped as duplicates.
import type { Prisma } from '../generated/prisma/client';
import type { Db } from './client';

/** Inserts the codes; returns how many were new. */
export function loadTickets(db: Db, campaignId: string, codes: string[]): Prisma.PrismaPromise<number> {
  return db.$executeRaw`
    INSERT INTO tickets (campaign_id, code)
    SELECT ${campaignId}::uuid, code FROM unnest(${codes}::text[]) AS code
    ON CONFLICT (campaign_id, code) DO NOTHING`;
}

/**
 * Generates `count` random codes server-side: prefix + 16 hex digits (64 random bits, so a
 * collision among a million codes has odds of about 3 in 100 million; one is skipped and counted
 * as a duplicate). Measured ~160k rows/s into the indexed table (PERFORMANCE.md).
 */
export function generateTickets(db: Db, campaignId: string, count: number, prefix: string): Prisma.PrismaPromise<number> {
  return db.$executeRaw`
    INSERT INTO tickets (campaign_id, code)
    SELECT ${campaignId}::uuid,
           ${prefix}::text || upper(lpad(to_hex((random() * 4294967295)::bigint), 8, '0')
                                    || lpad(to_hex((random() * 4294967295)::bigint), 8, '0'))
      FROM generate_series(1, ${count}::integer)
    ON CONFLICT (campaign_id, code) DO NOTHING`;
}
