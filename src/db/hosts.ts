// DATABASE_URL naming several servers, as libpq takes it, for failover:
//
//   postgresql://user@db-a:5432,db-b:5432/tessera?target_session_attrs=read-write
//
// node-postgres parses one host only (a comma in the host is an invalid URL to it;
// brianc/node-postgres#1470), so Tessera does what libpq does itself: a new connection tries the
// host that worked last, and when it cannot connect — or, with target_session_attrs=read-write, the
// server it reached is read-only (a standby that is not promoted yet) — the next new connection
// tries the next host. That connection attempt fails (a transient error: the client retries, a
// claim with its idempotency key), so after the primary dies and a standby is promoted, new
// connections find the promoted server without a restart or a configuration change. Connections to
// the dead primary are dropped by the pool as they fail.
//
// Without a comma and without target_session_attrs a URL is passed to pg as it is.
import { Client, type ClientBase, type ClientConfig } from 'pg';
import { PG } from './pgErrors';

export interface HostList {
  /** One single-host URL per listed host, in the order given (target_session_attrs removed). */
  readonly urls: readonly string[];
  /** target_session_attrs=read-write: only a server that accepts writes will do. */
  readonly readWrite: boolean;
}

const URL_PARTS = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/;

/** Splits a libpq-style multi-host URL; a plain URL gives a list of one. */
export function parseHosts(url: string): HostList {
  const parts = URL_PARTS.exec(url);
  if (!parts) return { urls: [url], readWrite: false };
  const [, scheme, userinfo = '', hostList = '', rest = ''] = parts;
  let readWrite = false;
  let tail = rest;
  const query = rest.indexOf('?');
  if (query >= 0) {
    const params = new URLSearchParams(rest.slice(query + 1));
    const attrs = params.get('target_session_attrs');
    if (attrs !== null) {
      if (attrs !== 'read-write' && attrs !== 'any') {
        throw new Error(`target_session_attrs=${attrs} is not supported: use read-write (the primary only) or any`);
      }
      readWrite = attrs === 'read-write';
      params.delete('target_session_attrs');
    }
    const kept = params.toString();
    tail = rest.slice(0, query) + (kept ? `?${kept}` : '');
  }
  const hosts = hostList.split(',').filter((h) => h !== '');
  if (hosts.length <= 1) return { urls: [`${scheme}${userinfo}${hostList}${tail}`], readWrite };
  return { urls: hosts.map((host) => `${scheme}${userinfo}${host}${tail}`), readWrite };
}

/** Raised for a connection that reached a read-only server when read-write was asked for. */
export class ReadOnlyServerError extends Error {
  // 57P03 (cannot_connect_now): what a server says while it cannot take this session yet — the
  // request is answered UNAVAILABLE and retried, like during a restart (pgErrors.ts).
  readonly code = PG.CANNOT_CONNECT_NOW;
  readonly severity = 'FATAL';
  constructor(where: string) {
    super(`the server at ${where} is read-only (a standby); DATABASE_URL asks for target_session_attrs=read-write, trying the next host`);
    this.name = 'ReadOnlyServerError';
  }
}

const hostOf = (url: string) => URL_PARTS.exec(url)?.[3] ?? url;

async function isReadOnly(client: ClientBase): Promise<boolean> {
  const { rows } = await client.query<{ transaction_read_only: string }>('SHOW transaction_read_only');
  return rows[0]?.transaction_read_only === 'on';
}

/**
 * Chooses the host for each new connection of a pg pool: the `Client` and `onConnect` options of
 * pg-pool. State is per pool (per process): every instance finds the primary on its own.
 */
export class HostSelector {
  private current = 0;

  constructor(readonly list: HostList) {}

  /** The URL the next new connection tries. */
  get url(): string {
    return this.list.urls[this.current]!;
  }

  /** The connection to `url` failed (or found a standby, or stopped answering: stallWatch.ts): the next one tries the host after it. */
  failed(url: string): void {
    if (this.list.urls[this.current] === url) this.current = (this.current + 1) % this.list.urls.length;
  }

  /** pg-pool's `Client`: a pg Client for the current host, which moves on when it cannot connect. */
  readonly Client = ((selector: HostSelector) =>
    function HostClient(config: ClientConfig) {
      const url = selector.url;
      const client = new Client({ ...config, connectionString: url });
      const connect = client.connect.bind(client) as (callback: (error: Error | null) => void) => void;
      (client as unknown as { connect: typeof connect }).connect = (callback) =>
        connect((error) => {
          if (error) selector.failed(url);
          callback(error);
        });
      (client as unknown as { tesseraUrl: string }).tesseraUrl = url;
      return client;
    })(this) as unknown as typeof Client;

  /** pg-pool's `onConnect`: with read-write asked for, refuses a connection to a read-only server. */
  readonly onConnect = async (client: ClientBase): Promise<void> => {
    if (!this.list.readWrite) return;
    const url = (client as unknown as { tesseraUrl?: string }).tesseraUrl ?? this.url;
    if (await isReadOnly(client)) {
      this.failed(url);
      throw new ReadOnlyServerError(hostOf(url));
    }
  };
}

/**
 * One connected client on the first listed host that answers (and accepts writes, when asked): for
 * the one-off connection of the migrations at start-up, which tries every host at once.
 */
export async function connectClient(url: string): Promise<Client> {
  const list = parseHosts(url);
  let last: unknown = null;
  for (const hostUrl of list.urls) {
    const client = new Client({ connectionString: hostUrl });
    client.on('error', () => undefined); // a dropped connection surfaces as a failed query
    try {
      await client.connect();
      if (list.readWrite && (await isReadOnly(client))) throw new ReadOnlyServerError(hostOf(hostUrl));
      return client;
    } catch (error) {
      last = error;
      await client.end().catch(() => undefined);
    }
  }
  throw last;
}
