// The campaign's row as the claim statements return it beside each allocation (so the response's
// `campaign { … }` costs no second query), and its mapping to the model: one list for the single
// claims (src/claim/firstLook.ts, src/claim/secondLook.ts).
import { Prisma } from '../generated/prisma/client';
import type { CampaignModel, CampaignStatus } from '../models';

/** Select list over the campaigns row aliased `cp`. */
export const CAMPAIGN_COLUMNS = Prisma.raw(`cp.name AS campaign_name, cp.status AS campaign_status, cp.opens_at AS campaign_opens_at,
           cp.closes_at AS campaign_closes_at, cp.per_holder_limit AS campaign_per_holder_limit,
           cp.created_at AS campaign_created_at`);

export interface CampaignColumns {
  campaign_name: string | null;
  campaign_status: CampaignStatus | null;
  campaign_opens_at: Date | null;
  campaign_closes_at: Date | null;
  campaign_per_holder_limit: number | null;
  campaign_created_at: Date | null;
}

/** The campaign of a row that has one (a claim that passed the gate). */
export function campaignOf(id: string, row: CampaignColumns): CampaignModel {
  return {
    id,
    name: row.campaign_name!,
    status: row.campaign_status!,
    opensAt: row.campaign_opens_at,
    closesAt: row.campaign_closes_at,
    perHolderLimit: row.campaign_per_holder_limit,
    createdAt: row.campaign_created_at!,
  };
}
