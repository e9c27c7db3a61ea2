// openCampaign: DRAFT -> OPEN, once (and a BALLOT campaign's committed seed). The conditional update decides who opened it when two opens
// race, and its CAMPAIGN_OPENED event (webhookEvents.ts) is appended in the same statement: one
// event per opening, and none for an open that changed nothing.
import type { Db } from './client';
import { ENDPOINTS_LISTENING } from './webhookEvents';
import { Prisma } from '../generated/prisma/client';

/**
 * Opens a DRAFT campaign; true when this call opened it. A BALLOT campaign's ballot row — the seed's
 * commitment and the sealed seed (src/ballot/seed.ts) — is written by the same statement, so a
 * ballot is open exactly when it has a committed seed.
 */
export async function openCampaign(db: Db, campaignId: string, ballot: { commitment: string; sealed: string } | null = null): Promise<boolean> {
  const rows = await db.$queryRaw<{ opened: boolean }[]>`
    WITH opened AS (
      UPDATE campaigns SET status = 'OPEN', opened_at = statement_timestamp()
       WHERE id = ${campaignId}::uuid AND status = 'DRAFT'
      RETURNING id
    ),
    seeded AS (
      INSERT INTO ballots (campaign_id, seed_commitment, sealed_seed)
      SELECT o.id, ${ballot?.commitment ?? null}::text, ${ballot?.sealed ?? null}::text FROM opened o WHERE ${ballot?.commitment ?? null}::text IS NOT NULL
    ),
    evented AS (
      INSERT INTO webhook_events (type, campaign_id, data)
      SELECT 'CAMPAIGN_OPENED', o.id, tessera_campaign_event_data(o.id, 'OPEN') FROM opened o WHERE ${Prisma.raw(ENDPOINTS_LISTENING)}
    )
    SELECT EXISTS (SELECT 1 FROM opened) AS opened`;
  return rows[0]?.opened === true;
}
