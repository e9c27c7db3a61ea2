// Reading allocations: by id (for `allocation(id)` and the DataLoader), by idempotency key (a
// replay), and a campaign's page in allocation order (Campaign.allocations).
import { Prisma } from '../generated/prisma/client';
import type { Db } from './client';
import { ALLOCATION_COLUMNS, toAllocation, type AllocationRow } from './allocationRow';
import type { AllocationModel } from '../models';
import { inStatement, type Span } from '../tracing';

export async function findAllocationsByIds(db: Db, ids: readonly string[]): Promise<AllocationModel[]> {
  const rows = await db.$queryRaw<AllocationRow[]>`
    SELECT ${Prisma.raw(ALLOCATION_COLUMNS)} FROM allocations WHERE id = ANY(${ids}::uuid[])`;
  return rows.map(toAllocation);
}

/** The allocations a request with this key made (claimTickets: several, in request order). */
export async function findAllocationsByKey(
  db: Db,
  q: { campaignId: string; partnerId: string; idempotencyKey: string },
  trace?: Span,
): Promise<{ allocations: AllocationModel[]; requestHash: string | null }> {
  const rows = await inStatement(trace, 'findAllocationsByKey', () =>
    db.$queryRaw<AllocationRow[]>`
      SELECT ${Prisma.raw(ALLOCATION_COLUMNS)} FROM allocations
       WHERE campaign_id = ${q.campaignId}::uuid AND partner_id = ${q.partnerId}::uuid
         AND idempotency_key = ${q.idempotencyKey}::text
       ORDER BY request_index`.then((found) => found),
  );
  return { allocations: rows.map(toAllocation), requestHash: rows[0]?.request_hash ?? null };
}

export interface AllocationPageQuery {
  campaignId: string;
  /** Only this partner's allocations; null for all (admin). */
  partnerId: string | null;
  /** Sequence after which the page starts (exclusive); null for the first page. */
  afterSequence: number | null;
  /** Only this holder's allocations (exact); null for every holder. */
  holder: string | null;
  /** Only the allocations of the ticket with this code (exact); null for every ticket. */
  code: string | null;
  limit: number;
  newestFirst: boolean;
}

/** Up to `limit + 1` allocations, so the caller can tell whether there is a next page. */
export async function findAllocationPage(db: Db, q: AllocationPageQuery): Promise<AllocationModel[]> {
  const rows = q.newestFirst
    ? await db.$queryRaw<AllocationRow[]>`
        SELECT ${Prisma.raw(ALLOCATION_COLUMNS)} FROM allocations
         WHERE campaign_id = ${q.campaignId}::uuid
           AND (${q.partnerId}::uuid IS NULL OR partner_id = ${q.partnerId}::uuid)
           AND ${searched(q)}
           AND (${q.afterSequence}::bigint IS NULL OR sequence < ${q.afterSequence}::bigint)
         ORDER BY sequence DESC
         LIMIT ${q.limit + 1}::integer`
    : await db.$queryRaw<AllocationRow[]>`
        SELECT ${Prisma.raw(ALLOCATION_COLUMNS)} FROM allocations
         WHERE campaign_id = ${q.campaignId}::uuid
           AND (${q.partnerId}::uuid IS NULL OR partner_id = ${q.partnerId}::uuid)
           AND ${searched(q)}
           AND sequence > COALESCE(${q.afterSequence}::bigint, 0)
         ORDER BY sequence
         LIMIT ${q.limit + 1}::integer`;
  return rows.map(toAllocation);
}

export async function countAllocations(db: Db, q: Pick<AllocationPageQuery, 'campaignId' | 'partnerId' | 'holder' | 'code'>): Promise<number> {
  const rows = await db.$queryRaw<{ n: bigint }[]>`
    SELECT count(*) AS n FROM allocations
     WHERE campaign_id = ${q.campaignId}::uuid
       AND (${q.partnerId}::uuid IS NULL OR partner_id = ${q.partnerId}::uuid)
       AND ${searched(q)}`;
  return Number(rows[0]?.n ?? 0);
}

/**
 * The search of a page (the console's "find by holder or code"): exact matches, within the
 * campaign's rows — no index of its own, as one would cost every claim an index write; a search
 * reads the campaign's allocations (a few hundred milliseconds for a million).
 */
function searched(q: Pick<AllocationPageQuery, 'campaignId' | 'holder' | 'code'>): Prisma.Sql {
  return Prisma.sql`(${q.holder}::text IS NULL OR holder = ${q.holder}::text)
       AND (${q.code}::text IS NULL OR ticket_id = (SELECT t.id FROM tickets t WHERE t.campaign_id = ${q.campaignId}::uuid AND t.code = ${q.code}::text))`;
}
