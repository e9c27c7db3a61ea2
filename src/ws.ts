// graphql-ws on /graphql (the same port as HTTP): the campaignStats subscription.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import type { GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import { createContext, type Context, type Services } from './context';
import type { Database } from './db/client';
import type { LiveUpdates } from './live';
import type { Logger } from './logger';

export function subscriptionServer(
  httpServer: http.Server,
  schema: GraphQLSchema,
  options: { db: Database; services: Services; live: LiveUpdates; logger: Logger },
): { dispose(): void | Promise<void> } {
  const { db, services, live } = options;
  // Upgrades are handed over explicitly rather than attaching the WebSocket server to the HTTP
  // server: attached, it re-emits the HTTP server's own errors (a port in use), which graphql-ws
  // reports as "Internal error emitted on the WebSocket server" — the listener reports them.
  const wsServer = new WebSocketServer({ noServer: true });
  httpServer.on('upgrade', (request: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if (new URL(request.url ?? '/', 'http://localhost').pathname !== '/graphql') {
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      return;
    }
    wsServer.handleUpgrade(request, socket, head, (ws) => wsServer.emit('connection', ws, request));
  });
  return useServer<Record<string, unknown>, { context?: Context }>(
    {
      schema,
      // The key comes in the connection's payload, as a browser cannot set headers on a WebSocket.
      onConnect: async (ctx) => {
        const params = ctx.connectionParams ?? {};
        const header = typeof params.Authorization === 'string' ? params.Authorization : typeof params.authorization === 'string' ? params.authorization : undefined;
        try {
          ctx.extra.context = await createContext(db, services, live, header);
          return true;
        } catch {
          return false; // closes with 4403 Forbidden
        }
      },
      context: (ctx) => ({ ...ctx.extra.context!, requestId: randomUUID() }),
    },
    wsServer,
  );
}
