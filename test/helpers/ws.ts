// graphql-ws clients for the tests: a real socket to a real server, optionally from another
// loopback address (127.0.0.2, …) so that per-address limits can tell clients apart.
import http from 'node:http';
import { createClient, type Client, type FormattedExecutionResult } from 'graphql-ws';
import WebSocket from 'ws';

export interface SocketClient {
  readonly client: Client;
  /** The close event's code, once the socket has closed. */
  closed(): number | undefined;
  dispose(): Promise<void>;
}

/** A graphql-ws client with `key` in its connection payload (null: none). */
export function connectSocket(httpUrl: string, key: string | null, options: { localAddress?: string } = {}): SocketClient {
  let closeCode: number | undefined;
  class LocalWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, options.localAddress ? { localAddress: options.localAddress } : {});
    }
  }
  const client = createClient({
    url: httpUrl.replace(/^http/, 'ws'),
    webSocketImpl: LocalWebSocket,
    connectionParams: key === null ? {} : { Authorization: `Bearer ${key}` },
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
