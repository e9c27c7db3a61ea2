// The legacy subscriptions protocol — subscriptions-transport-ws's, subprotocol `graphql-ws`, which
// GraphQL Playground and older Apollo and mobile clients speak — as a framing in front of the same
// graphql-ws server (makeServer) that serves `graphql-transport-ws`: every hook (admission, controls,
// caps, revocation, audit, masking: ws.ts) is the one both protocols run. Only the messages differ:
//
//   client → server    connection_init → connection_init     start → subscribe     stop → complete
//                      connection_terminate: the socket closes (1000)
//   server → client    connection_ack → connection_ack (then `ka` every keepAliveMs)
//                      next → data     error → error (its errors as a list)     complete → complete
//                      a close before connection_ack (a refused key) is preceded by connection_error
//
// A legacy client sends its `start` messages right after connection_init, without waiting for the
// acknowledgement; graphql-ws would close on a subscribe before it. So what arrives after
// connection_init waits here until the server has acknowledged (or closed) — within what the socket
// may send before its key is accepted (wsLimits.ts guards the raw socket). No maintained package
// serves this protocol (subscriptions-transport-ws's own server was last released in 2021 and runs
// operations itself, outside these hooks), hence this file.
import type http from 'node:http';
import { DEPRECATED_GRAPHQL_WS_PROTOCOL, type Server } from 'graphql-ws';
import { WebSocketServer, type WebSocket } from 'ws';

/** graphql-ws's message type for each legacy client message it has one for. */
const FROM_CLIENT: Readonly<Record<string, string>> = { connection_init: 'connection_init', start: 'subscribe', stop: 'complete' };
/** The legacy message type for each graphql-ws server message a legacy client understands (`pong` has none). */
const TO_CLIENT: Readonly<Record<string, string>> = { connection_ack: 'connection_ack', next: 'data', error: 'error', complete: 'complete' };

/** Whether an upgrade asks for the legacy protocol only (a client offering both gets graphql-transport-ws). */
export function wantsLegacyProtocol(request: http.IncomingMessage): boolean {
  const offered = (request.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  return offered.includes(DEPRECATED_GRAPHQL_WS_PROTOCOL) && !offered.includes('graphql-transport-ws');
}

/**
 * A WebSocket server for legacy sockets, handing each to `server` (makeServer over ws.ts's hooks)
 * with `{ socket, request }` as its extra, as graphql-ws's useServer does for the other protocol.
 * Dead peers are found as useServer finds them: a ping every keepAliveMs, the socket terminated when
 * no pong came by the next one.
 */
export function legacyProtocolServer(
  server: Server<{ socket: WebSocket; request: http.IncomingMessage }>,
  options: { maxPayload: number; WebSocket: typeof WebSocket; keepAliveMs: number },
): { wsServer: WebSocketServer; dispose(): Promise<void> } {
  const wsServer = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxPayload,
    WebSocket: options.WebSocket,
    handleProtocols: (protocols) => (protocols.has(DEPRECATED_GRAPHQL_WS_PROTOCOL) ? DEPRECATED_GRAPHQL_WS_PROTOCOL : false),
  });

  wsServer.on('connection', (socket: WebSocket, request: http.IncomingMessage) => {
    let acknowledged = false;
    let alive = true;
    /** What arrived after connection_init, until the server acknowledges it (null: passed straight on). */
    let waiting: string[] | null = null;
    let deliver: (data: string) => Promise<void> = () => Promise.resolve();
    const send = (message: Record<string, unknown>) =>
      new Promise<void>((resolve, reject) => {
        if (socket.readyState !== socket.OPEN) return resolve();
        socket.send(JSON.stringify(message), (error) => (error ? reject(error) : resolve()));
      });
    const keepAlive = setInterval(() => {
      if (!alive) return void socket.terminate();
      alive = false;
      socket.ping();
      if (acknowledged) void send({ type: 'ka' }).catch(() => undefined);
    }, options.keepAliveMs);
    socket.on('pong', () => (alive = true));
    socket.once('error', () => socket.terminate());

    const closed = server.opened(
      {
        // The framing below turns this socket's messages into graphql-transport-ws's.
        protocol: 'graphql-transport-ws',
        send: async (data) => {
          const message = JSON.parse(data) as Record<string, unknown> & { type: string };
          const type = TO_CLIENT[message.type];
          if (type === undefined) return;
          await send({ ...message, type });
          if (message.type !== 'connection_ack') return;
          acknowledged = true;
          await send({ type: 'ka' });
          const queued = waiting ?? [];
          waiting = null;
          // In order, each without waiting for the one before (a subscribe's promise lasts as long as it does).
          for (const queuedData of queued) deliver(queuedData).catch(() => socket.close(4500, 'Internal server error'));
        },
        close: (code, reason) => {
          if (!acknowledged && socket.readyState === socket.OPEN) socket.send(JSON.stringify({ type: 'connection_error', payload: { message: reason } }));
          socket.close(code, reason);
        },
        onMessage: (cb) => {
          deliver = cb;
          socket.on('message', (raw) => {
            const data = String(raw);
            let message: Record<string, unknown> & { type?: unknown };
            try {
              message = JSON.parse(data) as typeof message;
            } catch {
              return void cb(data).catch(() => socket.close(4400, 'Invalid message received'));
            }
            if (message.type === 'connection_terminate') return void socket.close(1000, 'Normal Closure');
            const type = typeof message.type === 'string' ? FROM_CLIENT[message.type] : undefined;
            // Anything else goes on as it came: graphql-ws closes the socket on what it does not know.
            const translated = type === undefined ? data : JSON.stringify({ ...message, type });
            if (waiting !== null) return void waiting.push(translated);
            if (type === 'connection_init' && !acknowledged) waiting = [];
            cb(translated).catch(() => socket.close(4500, 'Internal server error'));
          });
        },
      },
      { socket, request },
    );
    socket.once('close', (code, reason) => {
      clearInterval(keepAlive);
      void closed(code, String(reason));
    });
  });

  return {
    wsServer,
    dispose: async () => {
      for (const client of wsServer.clients) client.close(1001, 'Going away');
      await new Promise<void>((resolve) => wsServer.close(() => resolve()));
    },
  };
}
