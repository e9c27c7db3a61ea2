// HTTP's adapter of the per-operation controls that need the resolved operation: a subscription
// sent over HTTP is refused naming the transport that serves it, and every other operation is
// charged to the caller's rate limit (operations.ts).
import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server';
import { GraphQLError } from 'graphql';
import type { OperationContext } from '../context';
import { NOT_OVER_HTTP, type OperationControls } from '../operations';

export function rateLimitingPlugin(controls: OperationControls): ApolloServerPlugin<OperationContext> {
  // One listener serves every request: it keeps nothing of a request's own.
  const listener: GraphQLRequestListener<OperationContext> = {
    async didResolveOperation({ contextValue, operation, document, schema, request }) {
      if (!operation) return;
      if (operation.operation === 'subscription') {
        throw new GraphQLError(NOT_OVER_HTTP, { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } });
      }
      await controls.admit(contextValue.viewer, schema, document, operation, request.variables ?? {});
    },
  };
  return {
    async requestDidStart() {
      return listener;
    },
  };
}
