// Rate limits per API key, by what the operation costs (rateLimit.ts); the admin key is not limited.
import type { ApolloServerPlugin } from '@apollo/server';
import type { Context } from '../context';
import { rateLimited } from '../errors';
import { operationCost, type RateLimits } from '../rateLimit';

export function rateLimitingPlugin(rateLimits: RateLimits): ApolloServerPlugin<Context & { requestId: string }> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ contextValue, operation }) {
          const viewer = contextValue.viewer;
          if (viewer?.kind !== 'partner' || !operation) return;
          const verdict = await rateLimits.consume(viewer.partnerId, operationCost(operation), viewer.rateLimit);
          if (!verdict.allowed) throw rateLimited(verdict.retryAfterSeconds, 'This API key has used its rate limit; retry after the given seconds.');
        },
      };
    },
  };
}
