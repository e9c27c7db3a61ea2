import type { WebhookEndpointResolvers } from '../generated/graphql';

export const WebhookEndpoint: WebhookEndpointResolvers = {
  // Through the request's partner loader, as Allocation.partner: the same Partner fields either way.
  // null: an operator endpoint.
  partner: async (endpoint, _, ctx) => {
    if (endpoint.partnerId === null) return null;
    const partner = await ctx.loaders.partner.load(endpoint.partnerId);
    if (!partner) throw new Error(`partner ${endpoint.partnerId} of webhook endpoint ${endpoint.id} is missing`);
    return partner;
  },
};
