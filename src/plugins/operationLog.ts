// One log line per operation (never the API key, never variables or metadata), request ids on
// errors for formatError, 503 + Retry-After when the database was the problem, error counts.
import type { ApolloServerPlugin } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError } from 'graphql';
import type { Context } from '../context';
import { isTransientDbError } from '../db/pgErrors';
import { ErrorCode, InvalidInput, RETRY_AFTER_SECONDS } from '../errors';
import type { TaggedError } from '../formatError';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';

export function operationLogPlugin(logger: Logger, metrics: Metrics): ApolloServerPlugin<Context & { requestId: string }> {
  return {
    async requestDidStart({ contextValue }) {
      const started = performance.now();
      return {
        async didEncounterErrors({ errors, response }) {
          let transient = false;
          for (const error of errors) {
            const original = unwrapResolverError(error);
            (error as TaggedError).requestId = contextValue.requestId;
            if (isTransientDbError(original) || (original instanceof GraphQLError && original.extensions.code === ErrorCode.UNAVAILABLE)) transient = true;
            else if (!(original instanceof GraphQLError) && !(original instanceof InvalidInput)) {
              logger.error({ err: original, requestId: contextValue.requestId, path: error.path }, 'unexpected error');
            }
          }
          if (transient) {
            response.http.status = 503;
            response.http.headers.set('retry-after', String(RETRY_AFTER_SECONDS));
          }
        },
        async willSendResponse({ response, operation, operationName }) {
          const body = response.body.kind === 'single' ? response.body.singleResult : undefined;
          const codes = (body?.errors ?? []).map((e) => String(e.extensions?.code ?? 'UNKNOWN'));
          for (const code of codes) metrics.graphqlErrors.inc({ code });
          logger.info(
            {
              requestId: contextValue.requestId,
              viewer: contextValue.viewer?.kind,
              partnerId: contextValue.viewer?.kind === 'partner' ? contextValue.viewer.partnerId : undefined,
              operation: operationName ?? undefined,
              type: operation?.operation,
              status: response.http.status ?? 200,
              ms: Math.round((performance.now() - started) * 10) / 10,
              ...(codes.length ? { errors: codes } : {}),
            },
            'graphql',
          );
        },
      };
    },
  };
}
