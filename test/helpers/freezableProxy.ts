// A TCP proxy in front of PostgreSQL that can be frozen: what a stopped (SIGSTOP), partitioned or
// powered-off database server looks like to its clients. Once frozen it keeps every client
// connection open and forwards nothing on it, in either direction, and it still accepts new
// connections but never answers them: no reset, no FIN, no byte — exactly what the kernel of a
// host whose postmaster is stopped does (it completes the handshake and acknowledges what it
// receives; nobody reads it).
//
// Its own connections to PostgreSQL are closed when it freezes: the server behind a frozen primary
// in a failover is the promoted standby, which has none of the frozen primary's sessions, nor their
// transactions' locks. A transaction whose COMMIT had reached PostgreSQL is committed (as it would
// be on the standby with synchronous replication); its client never hears so — the indeterminate
// outcome idempotency keys are for.
import net from 'node:net';

export interface FreezableProxy {
  readonly port: number;
  /** Client connections accepted since the start (frozen or not). */
  readonly accepted: number;
  /** Bytes forwarded, both directions together. */
  readonly forwardedBytes: number;
  /** The local ports of the proxy's live connections to PostgreSQL (its sessions' client_port there). */
  upstreamPorts(): number[];
  readonly frozen: boolean;
  /** Stops forwarding, now; connections stay open and new ones are accepted but never answered. */
  freeze(): void;
  /**
   * Freezes right after forwarding the next bytes a client sends that contain `marker` (a
   * statement's parameter, say an idempotency key's prefix), before any answer: the freeze then
   * certainly catches that statement in flight. Resolves once frozen; rejects (not frozen) when
   * no such bytes came within `timeoutMs`.
   */
  freezeAfterRequestWith(marker: string, timeoutMs?: number): Promise<void>;
  /** Back to life: destroys every connection it held frozen (their sessions are gone) and forwards new ones again. */
  thaw(): void;
  /** Closes the listener and every socket. */
  close(): Promise<void>;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket | null;
}

export async function startFreezableProxy(target: { host: string; port: number }): Promise<FreezableProxy> {
  const pairs = new Set<Pair>();
  let frozen = false;
  let accepted = 0;
  let forwardedBytes = 0;
  let freezeArmed: { marker: Buffer; freeze: () => void } | null = null;

  const hold = (pair: Pair) => {
    // Nothing more is read on either side; what the client sends stays in the kernel's buffers.
    pair.client.pause();
    pair.upstream?.destroy();
    pair.upstream = null;
  };

  const server = net.createServer((client) => {
    accepted += 1;
    const pair: Pair = { client, upstream: null };
    pairs.add(pair);
    client.on('error', () => undefined);
    client.on('close', () => {
      pairs.delete(pair);
      pair.upstream?.destroy();
    });
    if (frozen) {
      client.pause();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    pair.upstream = upstream;
    upstream.setNoDelay(true);
    client.setNoDelay(true);
    upstream.on('error', () => undefined);
    // Forwarded by hand, not piped: a paused socket then emits nothing more, whatever a pipe's drain would do.
    client.on('data', (chunk) => {
      if (frozen || pair.upstream !== upstream) return;
      forwardedBytes += chunk.length;
      upstream.write(chunk);
      if (freezeArmed && chunk.includes(freezeArmed.marker)) {
        const frozenNow = freezeArmed.freeze;
        freezeArmed = null;
        // After this turn: PostgreSQL gets the query, the client never its answer.
        setImmediate(frozenNow);
      }
    });
    upstream.on('data', (chunk) => {
      if (frozen || pair.upstream !== upstream) return;
      forwardedBytes += chunk.length;
      client.write(chunk);
    });
    // PostgreSQL closing a session (terminated, or the proxy's own close) reaches the client, unless frozen.
    upstream.on('close', () => {
      if (pair.upstream === upstream && !frozen) client.destroy();
    });
    client.on('end', () => {
      if (!frozen) upstream.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;

  const freeze = () => {
    frozen = true;
    for (const pair of pairs) hold(pair);
  };

  return {
    port,
    get accepted() {
      return accepted;
    },
    get forwardedBytes() {
      return forwardedBytes;
    },
    get frozen() {
      return frozen;
    },
    upstreamPorts: () => [...pairs].flatMap((p) => (p.upstream?.localPort ? [p.upstream.localPort] : [])),
    freeze,
    freezeAfterRequestWith(marker, timeoutMs = 10_000) {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          freezeArmed = null;
          reject(new Error(`no request with ${JSON.stringify(marker)} within ${timeoutMs} ms: not frozen`));
        }, timeoutMs);
        freezeArmed = {
          marker: Buffer.from(marker),
          freeze() {
            clearTimeout(timer);
            freeze();
            resolve();
          },
        };
      });
    },
    thaw() {
      for (const pair of pairs) pair.client.destroy();
      pairs.clear();
      frozen = false;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const pair of pairs) {
        pair.upstream?.destroy();
        pair.client.destroy();
      }
      pairs.clear();
      await closed;
    },
  };
}
