// A page of campaigns, newest first, by keyset: the cursor carries the last row's (created_at, id)
// at full microsecond precision (as text — a JS Date would drop the microseconds). Unlike an
// offset or Prisma's `cursor: {id}, skip: 1`, a keyset page neither skips nor repeats a campaign
// when the one under the cursor changes status or is created between pages.
import type { Db } from './client';
import type { CampaignMode, CampaignModel, CampaignStatus, ReleasePolicy } from '../models';

export interface CampaignCursor {
  createdAt: string;
  id: string;
}

interface CampaignRow {
  id: string;
  name: string;
  status: CampaignStatus;
  opens_at: Date | null;
  closes_at: Date | null;
  per_holder_limit: number | null;
  low_stock_threshold: number | null;
  max_hold_seconds: number | null;
  release_policy: ReleasePolicy;
  waitlist_offer_seconds: number;
  mode: CampaignMode;
  entries_close_at: Date | null;
  ballot_confirm_seconds: number | null;
  created_at: Date;
  created_at_text: string;
}

export async function findCampaignPage(
  db: Db,
  /**
   * `only`: these campaigns and no others (a scoped partner key's); null = every campaign. `test`:
   * test campaigns only (true), live ones only (false), or both (null).
   */
  q: { status: CampaignStatus | null; after: CampaignCursor | null; limit: number; only: string[] | null; test: boolean | null },
): Promise<{ campaign: CampaignModel; cursor: CampaignCursor }[]> {
  const rows = await db.$queryRaw<CampaignRow[]>`
    SELECT id, name, status, opens_at, closes_at, per_holder_limit, low_stock_threshold, max_hold_seconds, release_policy, waitlist_offer_seconds, mode, entries_close_at, ballot_confirm_seconds, created_at, created_at::text AS created_at_text
      FROM campaigns
     WHERE (${q.status}::campaign_status IS NULL OR status = ${q.status}::campaign_status)
       AND (${q.only}::uuid[] IS NULL OR id = ANY(${q.only}::uuid[]))
       AND (${q.test}::boolean IS NULL OR test = ${q.test}::boolean)
       AND (${q.after?.createdAt ?? null}::timestamptz IS NULL
            OR (created_at, id) < (${q.after?.createdAt ?? null}::timestamptz, ${q.after?.id ?? null}::uuid))
     ORDER BY created_at DESC, id DESC
     LIMIT ${q.limit + 1}::integer`;
  return rows.map((r) => ({
    campaign: {
      id: r.id,
      name: r.name,
      status: r.status,
      opensAt: r.opens_at,
      closesAt: r.closes_at,
      perHolderLimit: r.per_holder_limit,
      lowStockThreshold: r.low_stock_threshold,
      maxHoldSeconds: r.max_hold_seconds,
      releasePolicy: r.release_policy,
      waitlistOfferSeconds: r.waitlist_offer_seconds,
      mode: r.mode,
      entriesCloseAt: r.entries_close_at,
      ballotConfirmSeconds: r.ballot_confirm_seconds,
      createdAt: r.created_at,
    },
    cursor: { createdAt: r.created_at_text, id: r.id },
  }));
}
