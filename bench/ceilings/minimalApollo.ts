// A ceiling of `npm run bench`: the least an Apollo Server 5 process does per request — a one-field
// schema, no plugins, no authentication, no context — behind the same HTTP integration as Tessera
// (integration.ts). Run as a child process of its own (PORT); prints `ready` once it listens.
import { ApolloServer } from '@apollo/server';
import { serveApollo } from './integration';

async function main(): Promise<void> {
  const port = Number(process.env.PORT);
  // stopOnTerminationSignals off: a bench child has nothing to drain; SIGTERM ends it at once.
  const apollo = new ApolloServer({ typeDefs: 'type Query { ok: Boolean }', resolvers: { Query: { ok: () => true } }, stopOnTerminationSignals: false });
  await apollo.start();
  await serveApollo(apollo, port);
  process.on('SIGTERM', () => process.exit(0));
  console.log('ready');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
