// WebSocket clients for the tests — graphql-ws's, or subscriptions-transport-ws's for the legacy
// protocol: a real socket to a real server, optionally from another loopback address (127.0.0.2, …)
// so that per-address limits can tell clients apart.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { createClient, type Client, type FormattedExecutionResult } from 'graphql-ws';
import { SubscriptionClient, type OperationOptions } from 'subscriptions-transport-ws';
import WebSocket from 'ws';

/** The two subprotocols Tessera speaks on /graphql: graphql-ws's, and subscriptions-transport-ws's. */
export type WsProtocol = 'graphql-transport-ws' | 'graphql-ws';
export const WS_PROTOCOLS: readonly WsProtocol[] = ['graphql-transport-ws', 'graphql-ws'];

/** What the tests use of a client, whichever protocol it speaks. */
export type SocketOperations = Pick<Client, 'subscribe' | 'iterate'>;

export interface SocketClient {
  readonly protocol: WsProtocol;
  readonly client: SocketOperations;
  /** The close event's code, once the socket has closed. */
  closed(): number | undefined;
  dispose(): Promise<void>;
}

/**
 * A client with `key` in its connection payload (null: none): graphql-ws's own, or — protocol
 * `graphql-ws`, or TESSERA_TEST_WS_PROTOCOL=graphql-ws — subscriptions-transport-ws's, the legacy
 * client Playground speaks with.
 */
export function connectSocket(
  httpUrl: string,
  key: string | null,
  options: { localAddress?: string; connectionParams?: Record<string, unknown>; protocol?: WsProtocol } = {},
): SocketClient {
  let closeCode: number | undefined;
  const onClose: ((code: number, reason: string) => void)[] = [];
  class LocalWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, options.localAddress ? { localAddress: options.localAddress } : {});
      this.on('close', (code, reason) => {
        closeCode = code;
        for (const listener of onClose) listener(code, String(reason));
      });
    }
  }
  const url = httpUrl.replace(/^http/, 'ws');
  const connectionParams = { ...(key === null ? {} : { Authorization: `Bearer ${key}` }), ...options.connectionParams };
  const protocol = options.protocol ?? ((process.env.TESSERA_TEST_WS_PROTOCOL as WsProtocol | undefined) || 'graphql-transport-ws');
  if (protocol === 'graphql-ws') {
    const legacy = new SubscriptionClient(url, { connectionParams, reconnect: false, lazy: false }, LocalWebSocket);
    const client = legacyOperations(legacy, (listener) => onClose.push(listener));
    return { protocol, client, closed: () => closeCode, dispose: async () => legacy.close(true, true) };
  }
  const client = createClient({
    url,
    webSocketImpl: LocalWebSocket,
    connectionParams,
    retryAttempts: 0,
    lazy: false,
    // Keep the socket open between operations (the client closes an idle one otherwise).
    lazyCloseTimeout: 60_000,
    on: { closed: (event) => (closeCode = (event as { code?: number }).code) },
  });
  return { protocol, client, closed: () => closeCode, dispose: () => Promise.resolve(client.dispose()) };
}

/**
 * subscriptions-transport-ws's client behind graphql-ws's `subscribe`/`iterate`, as graphql-ws's
 * client ends them: an operation refused ends with its errors (a list), one whose socket closed with
 * the close event ({ code, reason }).
 */
function legacyOperations(legacy: SubscriptionClient, onSocketClose: (listener: (code: number, reason: string) => void) => void): SocketOperations {
  type Sink = Parameters<Client['subscribe']>[1];
  const open = new Set<Sink>();
  onSocketClose((code, reason) => {
    for (const sink of [...open]) sink.error({ code, reason });
    open.clear();
  });
  // The real client sends its first `start` right after connection_init, within what a socket may send
  // before its key is accepted (16 KiB): to test the other controls with larger documents, this one
  // waits for the acknowledgement first.
  let acknowledged = false;
  const connected = new Promise<void>((resolve) => legacy.onConnected(() => resolve()));
  void connected.then(() => (acknowledged = true));
  const subscribe = ((payload: Parameters<Client['subscribe']>[0], sink: Sink) => {
    open.add(sink);
    let subscription: { unsubscribe(): void } | undefined;
    let stopped = false;
    const start = () => {
      if (!stopped && open.has(sink)) subscription = request();
    };
    if (acknowledged) start();
    else void connected.then(start);
    return () => {
      stopped = true;
      open.delete(sink);
      subscription?.unsubscribe();
    };
    function request() {
      return legacy.request(payload as OperationOptions).subscribe({
        next: (value) => sink.next(value as never),
        error: (error) => {
          open.delete(sink);
          sink.error([error]);
        },
        complete: () => {
          open.delete(sink);
          sink.complete();
        },
      });
    }
  }) as Client['subscribe'];
  const iterate = ((payload: Parameters<Client['subscribe']>[0]) => {
    const values: unknown[] = [];
    const waiting: { resolve(step: IteratorResult<unknown>): void; reject(error: unknown): void }[] = [];
    let ended: { error?: unknown } | undefined;
    const end = (error?: unknown) => {
      ended = error === undefined ? {} : { error };
      for (const w of waiting.splice(0)) {
        if (error === undefined) w.resolve({ value: undefined, done: true });
        else w.reject(error);
      }
    };
    const stop = subscribe(payload, {
      next: (value) => (waiting.length ? waiting.shift()!.resolve({ value, done: false }) : values.push(value)),
      error: (error) => end(error),
      complete: () => end(),
    });
    return {
      next: (): Promise<IteratorResult<unknown>> => {
        if (values.length) return Promise.resolve({ value: values.shift(), done: false });
        if (ended) return ended.error === undefined ? Promise.resolve({ value: undefined, done: true }) : Promise.reject(ended.error);
        return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
      },
      return: () => {
        stop();
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }) as unknown as Client['iterate'];
  return { subscribe, iterate };
}

/**
 * Runs one operation over the socket and resolves with everything it produced: its results (for a
 * subscription, the first `take` of them) and the error the operation ended with, if any.
 */
export function runOverSocket(
  socket: SocketClient,
  payload: { query: string; variables?: Record<string, unknown>; operationName?: string },
  take = 1,
  timeoutMs = 5_000,
): Promise<{ results: FormattedExecutionResult<Record<string, unknown>, unknown>[]; error?: unknown }> {
  return new Promise((resolve) => {
    const results: FormattedExecutionResult<Record<string, unknown>, unknown>[] = [];
    let done = false;
    const finish = (error?: unknown) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stop();
      resolve({ results, ...(error === undefined ? {} : { error }) });
    };
    const timer = setTimeout(() => finish(new Error(`no answer over the socket within ${timeoutMs} ms`)), timeoutMs);
    const stop = socket.client.subscribe(payload, {
      next: (value) => {
        results.push(value);
        if (results.length >= take) finish();
      },
      error: (error) => finish(error),
      complete: () => finish(),
    });
  });
}

/** The GraphQL errors an operation ended with over the socket ([] when it ended well). */
export function socketErrors(outcome: { results: FormattedExecutionResult<Record<string, unknown>, unknown>[]; error?: unknown }): { message: string; extensions?: Record<string, unknown> }[] {
  const fromResults = outcome.results.flatMap((r) => (r.errors ?? []) as unknown as { message: string; extensions?: Record<string, unknown> }[]);
  const fromError = Array.isArray(outcome.error) ? (outcome.error as { message: string; extensions?: Record<string, unknown> }[]) : [];
  return [...fromResults, ...fromError];
}

/** POST /graphql from a given local address (fetch cannot choose one). */
export function postFrom(
  httpUrl: string,
  localAddress: string,
  key: string | null,
  query: string,
  variables?: Record<string, unknown>,
): Promise<{ status: number; body: { data?: any; errors?: { message: string; extensions?: Record<string, any> }[] } }> {
  const body = JSON.stringify({ query, variables });
  return new Promise((resolve, reject) => {
    const request = http.request(
      httpUrl,
      {
        method: 'POST',
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...(key === null ? {} : { authorization: `Bearer ${key}` }) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** A subscription kept open: what it has produced so far, and how it ended (if it has). */
export interface OpenSubscription {
  readonly results: FormattedExecutionResult<Record<string, unknown>, unknown>[];
  /** The GraphQL errors it ended with, or the close event that ended it. */
  readonly error: () => unknown;
  /** Resolves at its first result or its end, whichever comes first. */
  readonly settled: Promise<void>;
  ended(): boolean;
  stop(): void;
}

/** Starts `payload` over the socket and leaves it running until stop(). */
export function openSubscription(socket: SocketClient, payload: { query: string; variables?: Record<string, unknown> }): OpenSubscription {
  const results: FormattedExecutionResult<Record<string, unknown>, unknown>[] = [];
  let error: unknown;
  let ended = false;
  let settle: () => void = () => undefined;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const stop = socket.client.subscribe(payload, {
    next: (value) => {
      results.push(value);
      settle();
    },
    error: (e) => {
      error = e;
      ended = true;
      settle();
    },
    complete: () => {
      ended = true;
      settle();
    },
  });
  return { results, error: () => error, settled, ended: () => ended, stop };
}

/**
 * A WebSocket opened by hand on a raw TCP connection (no client library): the HTTP Upgrade request
 * written out, resolved once the server has answered 101. For tests that must control every byte.
 */
export function rawWebSocket(port: number, host = '127.0.0.1'): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, host);
    let answer = '';
    const onData = (chunk: Buffer) => {
      answer += chunk.toString('latin1');
      if (!answer.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      if (answer.startsWith('HTTP/1.1 101')) resolve(socket);
      else reject(new Error(`upgrade refused: ${answer.split('\r\n')[0]}`));
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('connect', () =>
      socket.write(
        'GET /graphql HTTP/1.1\r\n' +
          `Host: ${host}:${port}\r\n` +
          'Upgrade: websocket\r\nConnection: Upgrade\r\n' +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n` +
          'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n',
      ),
    );
  });
}

/**
 * The header of a client's text frame declaring `length` bytes of payload, masked (as a client's
 * frames must be) with a zero mask key — so the payload is sent as it is: zeros stay zeros.
 */
export function textFrameHeader(length: number): Buffer {
  const header = Buffer.alloc(14);
  header[0] = 0x81; // FIN, text
  header[1] = 0x80 | 127; // masked, 64-bit length follows
  header.writeBigUInt64BE(BigInt(length), 2);
  // bytes 10–13: the mask key, zero
  return header;
}

/**
 * Writes `total` zero bytes in `chunk`-sized pieces, waiting for 'drain' whenever the socket says
 * to (so that the sender buffers nothing), until all are written or the peer closes the socket.
 * Resolves with how many bytes were accepted by the socket.
 */
export function streamZeros(socket: net.Socket, total: number, chunk = 64 * 1024): Promise<number> {
  const zeros = Buffer.alloc(chunk);
  return new Promise((resolve) => {
    let written = 0;
    let over = false;
    const end = () => {
      if (over) return;
      over = true;
      resolve(written);
    };
    socket.on('error', end);
    socket.on('close', end);
    const pump = () => {
      while (!over && written < total) {
        const piece = Math.min(chunk, total - written);
        written += piece;
        if (!socket.write(piece === chunk ? zeros : zeros.subarray(0, piece))) {
          socket.once('drain', pump);
          return;
        }
      }
      end();
    };
    pump();
  });
}

/**
 * graphql-ws's client prints every socket closed under it on the console (its onNonLazyError): for
 * the files whose sockets the server closes on purpose, those lines are dropped, every other kept.
 */
export function muteClosedSocketErrors(): void {
  const consoleError = console.error;
  beforeAll(() => jest.spyOn(console, 'error').mockImplementation((...args: unknown[]) => (args[0]?.constructor?.name === 'CloseEvent' ? undefined : consoleError(...args))));
  afterAll(() => jest.restoreAllMocks());
}
