// graphql-ws on /graphql (the same port as HTTP): subscriptions, through the same controls as HTTP.
// Both subprotocols are spoken, chosen from the handshake: `graphql-transport-ws` (the graphql-ws
// library's, served by its useServer) and the legacy `graphql-ws` of subscriptions-transport-ws
// (GraphQL Playground, older Apollo clients: wsLegacy.ts, a framing in front of the same hooks).
//
// Only subscriptions are served over the socket: a query or a
// mutation sent there is refused, naming HTTP. Every subscribe message passes the operation
// controls (operations.ts): the parser's token limit, the same validation rules, the rate limit by
// cost. Its key is checked again (admission.ts, within API_KEY_CACHE_TTL_MS), and it gets a context
// of its own, with fresh loaders. Authorization is checked by the fields themselves (access.ts).
// Errors are masked by formatError, and each operation writes a log line.
//
// An open socket does not outlive its key. When a key is revoked or rotated on any instance (the
// live relay: Redis, or the cluster's primary), its sockets here are checked at once. Every open
// socket is also checked again every API_KEY_CACHE_TTL_MS, which covers instances the relay does not
// reach. A socket whose key no longer authenticates is closed with 4403.
//
// A socket's own limits — message sizes before and after its key is accepted, subscriptions per
// socket and per key — are in wsLimits.ts.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { GraphQLError, type ExecutionArgs, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import { makeServer, type Context as ConnectContext, type ServerOptions, type SubscribePayload } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import { keyOwnerOf } from './auth';
import type { Admit } from './admission';
import type { OperationContext } from './context';
import { isTransientDbError } from './db/pgErrors';
import { tagErrors } from './formatError';
import type { LiveUpdates } from './live';
import type { Logger } from './logger';
import { loggedName, NOT_OVER_WS, selectOperation, type OperationControls } from './operations';
import { ATTR, describeOperation, endedWith, operationOutcome, operationSpan, traceIdOf, type Span } from './tracing';
import { legacyProtocolServer, wantsLegacyProtocol } from './wsLegacy';
import { guardUnauthenticated, refusalsLogged, subscriptionSlots, WEBSOCKET_LIMIT_DEFAULTS, type SlotHolder, type WebSocketLimits } from './wsLimits';

const FORBIDDEN = 4403;
/** A ping (and, on the legacy protocol, a `ka` message) this often; a socket without a pong by the next is dropped (graphql-ws's default). */
const KEEP_ALIVE_MS = 12_000;

/** graphql-ws's context of a socket: its upgrade request, the socket, and Tessera's state once admitted. */
type SocketContext = ConnectContext<Record<string, unknown>, { socket: WebSocket; request: http.IncomingMessage; state?: SocketState }>;

interface OperationState {
  requestId: string;
  started: number;
  /** Tracing on: the trace its subscribe message was admitted in (its log line names it). */
  traceId?: string;
  context?: OperationContext;
  type?: string;
  name?: string | null;
  /** It counts against its socket's and its key's subscription caps (until it ends). */
  holdsSlot?: boolean;
}

interface SocketState extends SlotHolder {
  socket: WebSocket;
  /** Where a subscribe message without a traceparent of its own continues from: connection_init's payload, or the upgrade's headers. */
  carrier: Record<string, unknown>;
  address: string;
  authorization: string | undefined;
  /** Operations in flight, by the client's subscription id. */
  operations: Map<string, OperationState>;
}

export function subscriptionServer(
  httpServer: http.Server,
  schema: GraphQLSchema,
  options: {
    admit: Admit;
    controls: OperationControls;
    formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
    live: LiveUpdates;
    logger: Logger;
    /** How often every open socket's key is checked again (API_KEY_CACHE_TTL_MS; at least 1 s). */
    recheckMs: number;
    /** The socket's limits; those left out take WEBSOCKET_LIMIT_DEFAULTS. */
    limits?: Partial<WebSocketLimits>;
  },
): { dispose(): void | Promise<void> } {
  const { admit, controls, live, logger } = options;
  const limits: WebSocketLimits = { ...WEBSOCKET_LIMIT_DEFAULTS, ...options.limits };
  const slots = subscriptionSlots(limits);
  // Upgrades are handed over explicitly rather than attaching the WebSocket server to the HTTP
  // server: attached, it re-emits the HTTP server's own errors (a port in use), which graphql-ws
  // reports as "Internal error emitted on the WebSocket server" — the listener reports them.
  // maxPayload: ws refuses a frame (or a fragmented message) declaring more at its header, and
  // closes with 1009 before reading any of it.
  const socketClass = refusalsLogged(logger, limits);
  const wsServer = new WebSocketServer({ noServer: true, maxPayload: limits.maxMessageBytes, WebSocket: socketClass });
  /** Each socket's guard until its connection_init is accepted. */
  const unauthenticated = new WeakMap<WebSocket, { release(): void }>();
  httpServer.on('upgrade', (request: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if (new URL(request.url ?? '/', 'http://localhost').pathname !== '/graphql') {
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      return;
    }
    const peer = request.socket.remoteAddress;
    const target = wantsLegacyProtocol(request) ? legacy.wsServer : wsServer;
    target.handleUpgrade(request, socket, head, (ws) => {
      const exceeded = () => logger.info({ address: peer, limit: limits.maxUnauthenticatedBytes }, 'websocket closed: too much sent before connection_init was accepted');
      unauthenticated.set(ws, guardUnauthenticated(socket, limits.maxUnauthenticatedBytes, exceeded));
      target.emit('connection', ws, request);
    });
  });

  const open = new Set<SocketState>();
  const format = (errors: readonly GraphQLError[]) => errors.map((error) => options.formatError(error.toJSON(), error));
  /** An operation is over (its errors, or its completion): its log line, and it leaves the socket's state. */
  const finish = (state: SocketState, id: string, operation: OperationState, codes: string[]) => {
    controls.record({
      transport: 'ws',
      requestId: operation.requestId,
      viewer: operation.context?.viewer,
      operationName: operation.name,
      type: operation.type,
      ms: performance.now() - operation.started,
      codes,
      traceId: operation.traceId,
    });
    slots.release(state, operation);
    state.operations.delete(id);
  };

  /**
   * Checks a socket's key again, against a record read after the check began (admission.ts), so a
   * revocation elsewhere closes it within one sweep; closes the socket when the key no longer
   * authenticates (or cannot be checked).
   */
  const recheck = async (state: SocketState) => {
    try {
      if (await admit.recheck(state)) return;
    } catch (error) {
      // The database did not answer (a restart, a failover): the key is checked again at the next
      // sweep, rather than every socket of the instance closed for a blip. Anything else closes.
      if (isTransientDbError(error)) return;
    }
    state.socket.close(FORBIDDEN, 'Forbidden');
  };
  const stopWatchingKeys = live.onKeyChanged((owner) => {
    for (const state of open) if (state.keyOwner === owner) void recheck(state);
  });
  const sweep = setInterval(() => {
    for (const state of open) if (state.keyOwner !== undefined) void recheck(state);
  }, Math.max(options.recheckMs, 1000));
  sweep.unref();


  /**
   * Tracing on: `fn` inside the message's SERVER span — continuing `carrier`'s traceparent — ended
   * when it settles, with its outcome: OK, or the first error's code (a refused key's is set by
   * admission.ts). Off: `fn(undefined)`.
   */
  const traced = <T>(name: string, carrier: Record<string, unknown>, fn: (span: Span | undefined) => Promise<T>): Promise<T> => {
    const span = operationSpan(name, carrier, { [ATTR.transport]: 'ws' });
    if (span === undefined) return fn(undefined);
    return endedWith(
      span,
      fn(span).then((result) => {
        // An array is the refusal's errors; false, a refused connection_init (admission.ts set its code).
        if (Array.isArray(result)) span.setAttribute(ATTR.outcome, operationOutcome(result as GraphQLError[], undefined));
        else if (result !== false) span.setAttribute(ATTR.outcome, 'OK');
        return result;
      }),
    );
  };

  /** connection_init: the socket's key admitted (admission.ts), its state kept. */
  const connect = async (ctx: SocketContext, params: Record<string, unknown>, carrier: Record<string, unknown>, span: Span | undefined): Promise<boolean> => {
    const header = params.Authorization ?? params.authorization;
    const authorization = typeof header === 'string' ? header : undefined;
    const address = admit.clientAddress(ctx.extra.request);
    const requestId = randomUUID();
    span?.setAttribute(ATTR.requestId, requestId);
    try {
      const context = await admit({ authorization, address, requestId, transport: 'ws', trace: span });
      // Closed or closing meanwhile (its guard, or the client): no state kept, as onClose may have run already.
      if (ctx.extra.socket.readyState !== ctx.extra.socket.OPEN) return false;
      const state: SocketState = { socket: ctx.extra.socket, carrier, address, authorization, operations: new Map(), slots: 0 };
      state.keyOwner = keyOwnerOf(context.viewer);
      ctx.extra.state = state;
      open.add(state);
      unauthenticated.get(ctx.extra.socket)?.release();
      unauthenticated.delete(ctx.extra.socket);
      return true;
    } catch {
      return false; // closes with 4403 Forbidden
    }
  };

  /** A subscribe message: admitted, parsed, validated, measured and charged (operations.ts), or refused. */
  const subscribe = async (state: SocketState, id: string, payload: SubscribePayload, span: Span | undefined): Promise<ExecutionArgs | readonly GraphQLError[]> => {
    const operation: OperationState = { requestId: randomUUID(), started: performance.now(), traceId: traceIdOf(span) };
    state.operations.set(id, operation);
    span?.setAttribute(ATTR.requestId, operation.requestId);
    let context: OperationContext;
    try {
      context = await admit({ authorization: state.authorization, address: state.address, requestId: operation.requestId, transport: 'ws', trace: span });
    } catch (error) {
      // The socket's key no longer authenticates: this operation is refused, and the socket closed.
      setImmediate(() => state.socket.close(FORBIDDEN, 'Forbidden'));
      return [error as GraphQLError];
    }
    operation.context = context;
    try {
      const document = controls.parse(payload.query);
      const invalid = controls.validate(schema, document);
      if (invalid.length > 0) return invalid;
      const selected = selectOperation(document, payload.operationName);
      if (!selected) return [new GraphQLError('The document names no operation to run, or several without operationName.', { extensions: { code: 'BAD_REQUEST' } })];
      operation.type = selected.operation;
      operation.name = payload.operationName ?? selected.name?.value ?? null;
      if (span) describeOperation(span, selected.operation, loggedName(operation.name));
      // The cost limit answers before the transport's own refusal, as validation would (HTTP says the same).
      const measured = controls.measure(schema, document, selected, payload.variables ?? {});
      span?.setAttribute(ATTR.cost, measured.points);
      if (selected.operation !== 'subscription') return [new GraphQLError(NOT_OVER_WS, { extensions: { code: 'BAD_REQUEST' } })];
      await controls.charge(context.viewer, measured);
      const full = slots.take(state, operation);
      if (full) return [full];
      return { schema, document, operationName: payload.operationName, variableValues: payload.variables, contextValue: context };
    } catch (error) {
      if (error instanceof GraphQLError) return [error];
      throw error;
    }
  };

  const hooks: ServerOptions<Record<string, unknown>, SocketContext['extra']> = {
    schema,
    // The key comes in the connection's payload, as a browser cannot set headers on a WebSocket.
    onConnect: (ctx) => {
      const params = ctx.connectionParams ?? {};
      const carrier = typeof params.traceparent === 'string' ? params : (ctx.extra.request.headers as Record<string, unknown>);
      return traced('graphql-ws connection_init', carrier, (span) => connect(ctx, params, carrier, span));
    },
    onClose: (ctx) => {
      const state = ctx.extra.state;
      if (!state) return;
      open.delete(state);
      // An operation that never reached onComplete or onError (a send to the closing socket failed) gives its slot back here.
      for (const operation of state.operations.values()) slots.release(state, operation);
    },
    onSubscribe: (ctx, id, payload) => {
      const state = ctx.extra.state!;
      const own = payload.extensions as Record<string, unknown> | undefined;
      return traced('graphql-ws subscribe', typeof own?.traceparent === 'string' ? own : state.carrier, (span) => subscribe(state, id, payload, span));
    },
    onNext: (ctx, id, _payload, _args, result) => {
      if (!result.errors?.length) return;
      const operation = ctx.extra.state?.operations.get(id);
      tagErrors(result.errors, operation?.requestId ?? 'unknown', logger);
      return { ...result, errors: format(result.errors) };
    },
    onError: (ctx, id, _payload, errors) => {
      const state = ctx.extra.state;
      const operation = state?.operations.get(id);
      tagErrors(errors, operation?.requestId ?? 'unknown', logger);
      const formatted = format(errors);
      if (state && operation) finish(state, id, operation, formatted.map((e) => String(e.extensions?.code ?? 'UNKNOWN')));
      return formatted;
    },
    onComplete: (ctx, id) => {
      const state = ctx.extra.state;
      const operation = state?.operations.get(id);
      if (state && operation) finish(state, id, operation, []);
    },
  };
  const server = useServer(hooks, wsServer, KEEP_ALIVE_MS);
  const legacy = legacyProtocolServer(makeServer(hooks), { maxPayload: limits.maxMessageBytes, WebSocket: socketClass, keepAliveMs: KEEP_ALIVE_MS });
  return {
    dispose: async () => {
      clearInterval(sweep);
      stopWatchingKeys();
      await Promise.all([server.dispose(), legacy.dispose()]);
    },
  };
}
