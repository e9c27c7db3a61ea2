// The HTTP integration Tessera serves Apollo Server with: the one place that names it for the bench.
// Today that is apolloListener of src/http.ts — a node:http handler around Apollo's
// executeHTTPGraphQLRequest, with the JSON body read as Tessera reads it and nothing of Tessera's own
// (no CORS, shedding or authentication: graphqlHandler adds those; the operators' body limit). When Tessera moves to another
// integration, change `INTEGRATION` and `serveApollo` here, and the minimal Apollo ceiling of
// `npm run bench` (minimalApollo.ts) follows.
import http from 'node:http';
import type { ApolloServer, BaseContext } from '@apollo/server';
import { apolloListener } from '../../src/http';

/** What the bench prints and writes beside the minimal Apollo ceiling. */
export const INTEGRATION = "Tessera's apolloListener: node:http around executeHTTPGraphQLRequest";

/** Serves a started ApolloServer at POST /graphql on 127.0.0.1:`port` with that integration, no context. */
export function serveApollo(apollo: ApolloServer<BaseContext>, port: number): Promise<http.Server> {
  const listener = apolloListener(apollo, {
    context: async () => ({}),
    bodyLimit: () => 5 * 1024 * 1024,
    dropLimit: 5 * 1024 * 1024,
    logger: { error: (...args: unknown[]) => console.error(...args) },
  });
  const server = http.createServer(listener);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}
