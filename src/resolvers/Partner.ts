import type { PartnerResolvers } from '../generated/graphql';
import type { Context } from '../context';
import type { PartnerModel } from '../models';

/** A field the model may not carry (the caller's own partner is primed with id and name only). */
const detail =
  <K extends 'lastUsedAt' | 'revokedAt' | 'rateLimit' | 'scoped' | 'campaignScope'>(key: K) =>
  async (partner: PartnerModel, _: unknown, ctx: Context): Promise<NonNullable<PartnerModel[K]> | null> =>
    (partner[key] !== undefined ? partner[key] : (await ctx.loaders.partnerDetails.load(partner.id))?.[key]) ?? null;

export const Partner: PartnerResolvers = {
  lastUsedAt: detail('lastUsedAt'),
  revokedAt: detail('revokedAt'),
  rateLimit: detail('rateLimit'),
  testKey: (partner, _, ctx) => ctx.loaders.partnerTestKey.load(partner.id),
  campaignScope: async (partner, args, ctx) => ((await detail('scoped')(partner, args, ctx)) ? await detail('campaignScope')(partner, args, ctx) : null),
};
