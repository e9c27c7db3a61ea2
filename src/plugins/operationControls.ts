// HTTP's adapter of the per-operation controls (operations.ts), as one Apollo plugin:
//   - a subscription sent over HTTP is refused, naming the transport that serves it;
//   - every other operation is charged to the caller's rate limit once it is resolved;
//   - errors are tagged with the request id and unexpected ones logged (formatError.ts), and the
//     answer is 503 with Retry-After when the database was the problem;
//   - one log line per operation.
// One listener serves every request: it keeps nothing of a request's own (the operation's start
// is in its context), so a request costs Apollo no listener of its own to make, and each of its
// hooks one call.
import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server';
import { GraphQLError } from 'graphql';
import type { OperationContext } from '../context';
import { RETRY_AFTER_SECONDS } from '../errors';
import { tagErrors } from '../formatError';
import type { Logger } from '../logger';
import { loggedName, NOT_OVER_HTTP, type OperationControls } from '../operations';
import { ATTR, describeOperation, settleOutcome, traceIdOf } from '../tracing';

const NO_CODES: readonly string[] = [];

export function operationControlsPlugin(controls: OperationControls, logger: Logger): ApolloServerPlugin<OperationContext> {
  const listener: GraphQLRequestListener<OperationContext> = {
    async didResolveOperation({ contextValue, operation, document, schema, request, operationName }) {
      if (!operation) return;
      const span = contextValue.trace;
      if (span) describeOperation(span, operation.operation, loggedName(operationName));
      if (operation.operation === 'subscription') {
        throw new GraphQLError(NOT_OVER_HTTP, { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } });
      }
      const measured = controls.measure(schema, document, operation, request.variables ?? {});
      span?.setAttribute(ATTR.cost, measured.points);
      await controls.charge(contextValue.viewer, measured);
    },
    async didEncounterErrors({ contextValue, errors, response }) {
      if (tagErrors(errors, contextValue.requestId, logger).transient) {
        response.http.status = 503;
        response.http.headers.set('retry-after', String(RETRY_AFTER_SECONDS));
      }
    },
    async willSendResponse({ contextValue, response, operation, operationName }) {
      const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
      const span = contextValue.trace;
      if (span) settleOutcome(span, errors, response.body.kind === 'single' ? response.body.singleResult.data : undefined);
      controls.record({
        transport: 'http',
        requestId: contextValue.requestId,
        clientRequestId: contextValue.clientRequestId,
        viewer: contextValue.viewer,
        operationName,
        type: operation?.operation,
        status: response.http.status ?? 200,
        ms: performance.now() - contextValue.started,
        codes: errors ? errors.map((e) => String(e.extensions?.code ?? 'UNKNOWN')) : NO_CODES,
        traceId: traceIdOf(contextValue.trace),
      });
    },
  };
  return {
    async requestDidStart() {
      return listener;
    },
  };
}
