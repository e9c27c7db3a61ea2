// A server that stops answering without closing anything — frozen, partitioned, powered off — looks
// to its clients like a slow query that never ends: no reset arrives, the kernel may even keep
// acknowledging, and statement_timeout cannot fire on a server that does not run. Left alone, every
// pooled connection ends up waiting on it and claims stay down until TCP gives up (about 15 minutes
// by Linux defaults); keepalives do not help while a query is outstanding, and Node has no
// TCP_USER_TIMEOUT.
//
// So the pool watches its own queries. A query outstanding for longer than `stallMs` on a server
// gets that server probed on a new connection (connect and SELECT 1 within `probeTimeoutMs`). A
// server that answers is only slow: nothing is done (a long load or a lock wait is not cut short). A
// server that does not is given up on: every connection of the pool to it is destroyed — their
// queries fail as "connection lost", which the claim path answers UNAVAILABLE and clients retry by
// key — and the host list moves on (hosts.ts), so new connections try the next host, where a
// failover manager promotes the standby. Until a query or a probe succeeds again, /healthz says so.
import { Client, type ClientBase } from 'pg';

export interface StallWatchOptions {
  /** A query outstanding this long gets its server probed. */
  stallMs: number;
  /** The probe's whole budget: connect and SELECT 1. */
  probeTimeoutMs: number;
  /** Called once per server given up on. */
  onUnresponsive(url: string, error: Error): void;
  /** The host list's "this host failed": new connections try the next one. */
  hostFailed(url: string): void;
}

interface Watched {
  url: string;
  /** Start times of this connection's outstanding queries. */
  outstanding: Set<number>;
}

export class StallWatch {
  private readonly clients = new Map<ClientBase, Watched>();
  private readonly probing = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  /** Since when the server was last found not answering; null while it answers. */
  private unanswered: { url: string; since: number } | null = null;

  constructor(private readonly o: StallWatchOptions) {
    this.timer = setInterval(() => this.check(), Math.max(100, Math.min(1000, o.stallMs / 2)));
    this.timer.unref();
  }

  /** The server of the pool's connections was found not answering and nothing has answered since. */
  get unresponsive(): { url: string; since: number } | null {
    return this.unanswered;
  }

  /** Watches a new pooled connection to `url`: wraps its query() to time every query. */
  watch(client: ClientBase, url: string): void {
    const watched: Watched = { url, outstanding: new Set() };
    this.clients.set(client, watched);
    client.once('end', () => this.clients.delete(client));
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const started = performance.now();
      watched.outstanding.add(started);
      const done = (ok: boolean) => {
        watched.outstanding.delete(started);
        if (ok) this.unanswered = null;
      };
      const last = args.length - 1;
      if (typeof args[last] === 'function') {
        const callback = args[last] as (error: Error | null, result?: unknown) => void;
        args[last] = (error: Error | null, result?: unknown) => {
          done(!error);
          callback(error, result);
        };
        return query(...args);
      }
      const result = query(...args);
      if (result && typeof (result as Promise<unknown>).then === 'function') {
        (result as Promise<unknown>).then(
          () => done(true),
          () => done(false),
        );
      }
      return result;
    };
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    const now = performance.now();
    for (const watched of this.clients.values()) {
      for (const started of watched.outstanding) {
        if (now - started >= this.o.stallMs) {
          void this.probe(watched.url);
          break;
        }
      }
    }
  }

  private async probe(url: string): Promise<void> {
    if (this.probing.has(url)) return;
    this.probing.add(url);
    try {
      const error = await probe(url, this.o.probeTimeoutMs);
      if (!error) {
        this.unanswered = null;
        return;
      }
      if (this.unanswered?.url !== url) this.unanswered = { url, since: Date.now() };
      this.o.hostFailed(url);
      this.o.onUnresponsive(url, error);
      const lost = Object.assign(new Error(`Connection terminated: the database server stopped answering (${error.message})`), {
        code: 'ECONNRESET',
        syscall: 'read',
        errno: -104,
      });
      for (const [client, watched] of this.clients) {
        if (watched.url !== url) continue;
        this.clients.delete(client);
        (client as unknown as { connection?: { stream?: { destroy(error?: Error): void } } }).connection?.stream?.destroy(lost);
      }
    } finally {
      // A server found answering is not probed again before another stall is seen.
      setTimeout(() => this.probing.delete(url), this.o.stallMs).unref();
    }
  }
}

/**
 * Connects to `url` and runs SELECT 1 within `timeoutMs`: null when the server answered — with a row
 * or with an error of its own (too many connections, starting up: it runs) — else why not.
 */
async function probe(url: string, timeoutMs: number): Promise<Error | null> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  let timer: NodeJS.Timeout | undefined;
  try {
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to a probe within ${timeoutMs} ms`)), timeoutMs);
    });
    await Promise.race([client.connect().then(() => client.query('SELECT 1')), deadline]);
    return null;
  } catch (error) {
    return typeof (error as { severity?: unknown }).severity === 'string' ? null : (error as Error);
  } finally {
    clearTimeout(timer);
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    void client.end().catch(() => undefined);
  }
}
