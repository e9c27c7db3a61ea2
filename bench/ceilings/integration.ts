// The HTTP integration Tessera serves Apollo Server with (src/http.ts): the one place that names it
// for the bench. When Tessera moves to another integration, change `INTEGRATION` and `serveApollo`
// here, and the minimal Apollo ceiling of `npm run bench` (minimalApollo.ts) follows.
import http from 'node:http';
import type { ApolloServer, BaseContext } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import express from 'express';

/** What the bench prints and writes beside the minimal Apollo ceiling. */
export const INTEGRATION = '@as-integrations/express5 on Express 5';

/** Serves a started ApolloServer at POST /graphql on 127.0.0.1:`port`, the way the integration is meant to be used. */
export function serveApollo(apollo: ApolloServer<BaseContext>, port: number): Promise<http.Server> {
  const app = express();
  app.use('/graphql', express.json(), expressMiddleware(apollo));
  return new Promise((resolve, reject) => {
    const server = app.listen(port, '127.0.0.1', (error?: Error) => (error ? reject(error) : resolve(server)));
  });
}
