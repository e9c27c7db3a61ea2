// A campaign's row as the campaign services read it: the fields they select, the look-up that
// answers NOT_FOUND, and what a change must tell the request's loaders and the live subscribers.
import type { Database } from '../db/client';
import { notFound } from '../errors';
import type { LiveUpdates } from '../live';
import type { CampaignModel } from '../models';
import * as validate from '../validation';
import type { RequestContext } from './requestContext';

export const CAMPAIGN_FIELDS = {
  id: true,
  name: true,
  status: true,
  opensAt: true,
  closesAt: true,
  perHolderLimit: true,
  lowStockThreshold: true,
  maxHoldSeconds: true,
  releasePolicy: true,
  waitlistOfferSeconds: true,
  mode: true,
  entriesCloseAt: true,
  ballotConfirmSeconds: true,
  createdAt: true,
} as const;

/** The campaign, read from the primary; NOT_FOUND for a malformed id or a missing campaign. */
export async function requireCampaign(db: Database, id: string): Promise<CampaignModel> {
  if (!validate.isUuid(id)) throw notFound('Campaign', id);
  const campaign = await db.prisma.campaign.findUnique({ where: { id: id.toLowerCase() }, select: CAMPAIGN_FIELDS });
  if (!campaign) throw notFound('Campaign', id);
  return campaign;
}

/**
 * After a mutation changed the campaign: the request's loaders must not answer later fields with
 * the state before it, and campaignStats subscribers hear that its figures moved.
 */
export function freshCampaign(ctx: RequestContext, campaign: CampaignModel, live: LiveUpdates | undefined): CampaignModel {
  live?.changed(campaign.id);
  ctx.loaders.campaign.clear(campaign.id).prime(campaign.id, campaign);
  ctx.loaders.stats.clear(campaign.id);
  return campaign;
}
