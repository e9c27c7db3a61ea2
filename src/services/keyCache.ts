// The key records behind authentication, cached by prefix, and their last use — shared by partner
// keys (partners.ts) and operator keys (operatorKeys.ts).
//
// Every request is authenticated, and a database look-up per request costs more than the rest of an
// empty query, so a record is kept for `ttlMs` (0: no cache). A cached record still goes through the
// constant-time hash comparison (auth.ts). A revocation, rotation or change made in this process
// drops the record at once; one made on another instance arrives through live.ts (keyChanged) and
// drops it there; one made by SQL takes effect within the TTL.
import { LRUCache } from 'lru-cache';

/** last_used_at is written at most this often per key: a write per request would cost more than the request. */
const LAST_USED_RESOLUTION_MS = 60_000;

export class KeyCache<R extends { id: string; revokedAt: Date | null }> {
  private readonly records: LRUCache<string, R> | null;
  private readonly lastUsedWritten = new LRUCache<string, number>({ max: 100_000 });

  constructor(
    ttlMs: number,
    private readonly load: (prefix: string) => Promise<R | null>,
    private readonly writeLastUsed: (id: string, at: Date) => Promise<unknown>,
    private readonly onError: (error: unknown) => void,
  ) {
    this.records = ttlMs > 0 ? new LRUCache({ max: 10_000, ttl: ttlMs }) : null;
  }

  async find(prefix: string): Promise<R | null> {
    const cached = this.records?.get(prefix);
    if (cached) return cached;
    const record = await this.load(prefix);
    if (record && record.revokedAt === null) this.records?.set(prefix, record);
    return record;
  }

  /** Drops the cached record of the key with this prefix. */
  drop(prefix: string): void {
    this.records?.delete(prefix);
  }

  /** Drops the cached record of a key by its owner's id (a partner's, or an operator key's). */
  forget(id: string): void {
    for (const [prefix, record] of this.records?.entries() ?? []) if (record.id === id) this.records?.delete(prefix);
  }

  /** Records that a key authenticated a request, at most once a minute per key, off the request's path. */
  touch(id: string): void {
    const now = Date.now();
    if (now - (this.lastUsedWritten.get(id) ?? 0) < LAST_USED_RESOLUTION_MS) return;
    this.lastUsedWritten.set(id, now);
    this.writeLastUsed(id, new Date(now)).catch(this.onError);
  }
}
