// HTTP's adapter of the operation log (operations.ts records it): errors tagged with the request
// id and unexpected ones logged (formatError.ts), 503 + Retry-After when the database was the
// problem, and one line per operation.
import type { ApolloServerPlugin } from '@apollo/server';
import type { OperationContext } from '../context';
import { RETRY_AFTER_SECONDS } from '../errors';
import { tagErrors } from '../formatError';
import type { Logger } from '../logger';
import type { OperationControls } from '../operations';

export function operationLogPlugin(controls: OperationControls, logger: Logger): ApolloServerPlugin<OperationContext> {
  return {
    async requestDidStart({ contextValue }) {
      const started = performance.now();
      return {
        async didEncounterErrors({ errors, response }) {
          if (tagErrors(errors, contextValue.requestId, logger).transient) {
            response.http.status = 503;
            response.http.headers.set('retry-after', String(RETRY_AFTER_SECONDS));
          }
        },
        async willSendResponse({ response, operation, operationName }) {
          const body = response.body.kind === 'single' ? response.body.singleResult : undefined;
          controls.record({
            transport: 'http',
            requestId: contextValue.requestId,
            clientRequestId: contextValue.clientRequestId,
            viewer: contextValue.viewer,
            operationName,
            type: operation?.operation,
            status: response.http.status ?? 200,
            ms: performance.now() - started,
            codes: (body?.errors ?? []).map((e) => String(e.extensions?.code ?? 'UNKNOWN')),
          });
        },
      };
    },
  };
}
