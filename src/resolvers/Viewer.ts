import type { AuditEntryResolvers, ViewerResolvers } from '../generated/graphql';

/** Who is calling (auth.ts): an operator (ADMIN_API_KEY or an operator key) or a partner. */
export const Viewer: ViewerResolvers = {
  role: (viewer) => (viewer.kind === 'admin' ? viewer.role : null),
  operator: (viewer) => (viewer.kind === 'admin' ? viewer.operator : null),
  partner: (viewer) => (viewer.kind === 'partner' ? viewer.partner : null),
};

export const AuditEntry: AuditEntryResolvers = {
  operator: async (entry, _, ctx) => (entry.operatorId ? await ctx.loaders.operatorKey.load(entry.operatorId) : null),
  partner: async (entry, _, ctx) => {
    const partnerId = /^partner:(.+)$/.exec(entry.actor)?.[1];
    return partnerId ? await ctx.loaders.partner.load(partnerId) : null;
  },
};
