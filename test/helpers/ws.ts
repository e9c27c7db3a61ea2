// graphql-ws clients for the tests: a real socket to a real server, optionally from another
// loopback address (127.0.0.2, …) so that per-address limits can tell clients apart.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { createClient, type Client, type FormattedExecutionResult } from 'graphql-ws';
import WebSocket from 'ws';

export interface SocketClient {
  readonly client: Client;
  /** The close event's code, once the socket has closed. */
  closed(): number | undefined;
  dispose(): Promise<void>;
}

/** A graphql-ws client with `key` in its connection payload (null: none). */
export function connectSocket(httpUrl: string, key: string | null, options: { localAddress?: string; connectionParams?: Record<string, unknown> } = {}): SocketClient {
  let closeCode: number | undefined;
  class LocalWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, options.localAddress ? { localAddress: options.localAddress } : {});
    }
  }
  const client = createClient({
    url: httpUrl.replace(/^http/, 'ws'),
    webSocketImpl: LocalWebSocket,
    connectionParams: { ...(key === null ? {} : { Authorization: `Bearer ${key}` }), ...options.connectionParams },
    retryAttempts: 0,
    lazy: false,
    // Keep the socket open between operations (the client closes an idle one otherwise).
    lazyCloseTimeout: 60_000,
    on: { closed: (event) => (closeCode = (event as { code?: number }).code) },
  });
  return { client, closed: () => closeCode, dispose: () => Promise.resolve(client.dispose()) };
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
