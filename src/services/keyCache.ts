// The key records behind authentication, cached by prefix, and their last use — shared by partner
// keys (partners.ts) and operator keys (operatorKeys.ts).
//
// Every request is authenticated, and a database look-up per request costs more than the rest of an
// empty query, so a record is kept for `ttlMs` (0: no cache), counted from when its look-up began: a
// record is never older than the TTL, so a revocation this process did not hear of (another instance
// without a relay, or SQL) takes effect within the TTL. A cached record still goes through the
// constant-time hash comparison (auth.ts). A revocation, rotation or change made in this process
// drops the record at once; one made on another instance arrives through live.ts (keyChanged) and
// drops it there. A look-up that began before a drop is not cached: it may have read the old row.
//
// A prefix that matches no key (or a revoked one) is remembered as absent for the TTL too, in a cache
// of its own, so that a client repeating a wrong key costs one look-up per TTL and guesses cannot
// evict the records of valid keys.
//
// And the prefixes of the keys that exist (revoked ones left out), for the failed-authentication
// limit (admission.ts): an address over its limit still gets in with a key whose prefix is known,
// and deciding that costs no look-up per request. Loaded when first needed, kept current at once by
// this process's own changes, and read again from the database — one statement for every prefix —
// when a prefix is missing and the set is older than the TTL (at least a second): a key made on an
// instance that could not tell this one is known here within that bound.
import { setTimeout as sleep } from 'node:timers/promises';
import { LRUCache } from 'lru-cache';

/** last_used_at is written at most this often per key: a write per request would cost more than the request. */
const LAST_USED_RESOLUTION_MS = 60_000;
/** The set of known prefixes is read again at most this often, however short the TTL. */
const MIN_KNOWN_REFRESH_MS = 1_000;

/** A look-up's result, with when the look-up began (performance.now()). */
interface Loaded<R> {
  readonly record: R;
  readonly at: number;
}

export class KeyCache<R extends { id: string; revokedAt: Date | null }> {
  /** Records of keys that authenticate (not revoked), by prefix. */
  private readonly records: LRUCache<string, Loaded<R>> | null;
  /** Prefixes that matched no key, or a revoked one: when the look-up began. */
  private readonly absent: LRUCache<string, number> | null;
  /** Look-ups under way, by prefix: concurrent requests for one key share one. */
  private readonly loading = new Map<string, { at: number; promise: Promise<R | null> }>();
  /** Bumped by every drop: a look-up that began before it must not be cached. */
  private generation = 0;
  private readonly lastUsedWritten = new LRUCache<string, number>({ max: 100_000 });

  private known: Set<string> | null = null;
  private knownAt = -Infinity;
  private knownLoad: Promise<void> | null = null;
  /** Bumped by every change heard of from elsewhere: a read that began before it is out of date at once. */
  private knownForgotten = 0;
  /** This process's own changes made while the set is being read, applied over what was read. */
  private knownChanges: [prefix: string, exists: boolean][] | null = null;

  constructor(
    private readonly ttlMs: number,
    private readonly load: (prefix: string) => Promise<R | null>,
    private readonly writeLastUsed: (id: string, at: Date) => Promise<unknown>,
    private readonly onError: (error: unknown) => void,
    /** Every prefix of a key that exists, revoked ones left out. */
    private readonly loadPrefixes: () => Promise<string[]>,
  ) {
    this.records = ttlMs > 0 ? new LRUCache({ max: 10_000, ttl: ttlMs }) : null;
    this.absent = ttlMs > 0 ? new LRUCache({ max: 10_000, ttl: ttlMs }) : null;
  }

  /**
   * The key's record (null: no such key; a revoked record may be answered as null). `loadedSince`:
   * only a record whose look-up began at or after that instant (performance.now()) will do — an open
   * socket's periodic recheck asks for one read after the recheck began.
   */
  find(prefix: string, loadedSince = -Infinity): Promise<R | null> {
    const cached = this.records?.get(prefix);
    if (cached && cached.at >= loadedSince) return Promise.resolve(cached.record);
    const absentAt = this.absent?.get(prefix);
    if (absentAt !== undefined && absentAt >= loadedSince) return Promise.resolve(null);
    const pending = this.loading.get(prefix);
    if (pending && pending.at >= loadedSince) return pending.promise;
    return this.lookUp(prefix);
  }

  /** Whether the prefix's record, or its absence, is cached: authenticating it costs no look-up. */
  has(prefix: string): boolean {
    return Boolean(this.records?.has(prefix) || this.absent?.has(prefix));
  }

  /** Drops the cached record of the key with this prefix (its row changed here). */
  drop(prefix: string): void {
    this.records?.delete(prefix);
    this.absent?.delete(prefix);
    this.loading.delete(prefix);
    this.generation += 1;
  }

  /** Drops the cached record of a key by its owner's id (a partner's, or an operator key's): a change elsewhere. */
  forget(id: string): void {
    for (const [prefix, loaded] of this.records?.entries() ?? []) if (loaded.record.id === id) this.records?.delete(prefix);
    // Which prefix the change concerns is not known here (a rotation elsewhere makes a new one):
    // look-ups under way may have read the old row, and the set of prefixes is read again when next needed.
    this.loading.clear();
    this.generation += 1;
    this.knownAt = -Infinity;
    this.knownForgotten += 1;
  }

  /** A key was issued here: it works at once. */
  added(prefix: string): void {
    this.drop(prefix);
    this.noteKnown(prefix, true);
  }

  /** A key was revoked or replaced here: it stops working at once. */
  removed(prefix: string): void {
    this.drop(prefix);
    this.noteKnown(prefix, false);
  }

  /**
   * Whether a key with this prefix exists, from memory. A prefix missing from a set older than its
   * refresh interval makes the set be read again, and the answer waits for that read at most until
   * `waitUntil` (performance.now()): the failure floor, which a refusal waits for anyway, so the
   * time taken says nothing about the prefix and a busy database delays no refusal. Only the very
   * first read, before there is any set, is waited for whole.
   */
  async exists(prefix: string, waitUntil: number): Promise<boolean> {
    if (this.known?.has(prefix)) return true;
    if (performance.now() - this.knownAt >= Math.max(this.ttlMs, MIN_KNOWN_REFRESH_MS)) {
      const reading = this.readKnown();
      await (this.known ? Promise.race([reading, sleep(Math.max(0, waitUntil - performance.now()), undefined, { ref: false })]) : reading);
    }
    return this.known?.has(prefix) ?? false;
  }

  /** Records that a key authenticated a request, at most once a minute per key, off the request's path. */
  touch(id: string): void {
    const now = Date.now();
    if (now - (this.lastUsedWritten.get(id) ?? 0) < LAST_USED_RESOLUTION_MS) return;
    this.lastUsedWritten.set(id, now);
    this.writeLastUsed(id, new Date(now)).catch(this.onError);
  }

  private lookUp(prefix: string): Promise<R | null> {
    const at = performance.now();
    const generation = this.generation;
    const promise = this.load(prefix).then((record) => {
      if (generation === this.generation) this.remember(prefix, record, at);
      return record;
    });
    if (this.ttlMs > 0) {
      this.loading.set(prefix, { at, promise });
      const done = () => {
        if (this.loading.get(prefix)?.promise === promise) this.loading.delete(prefix);
      };
      promise.then(done, done);
    }
    return promise;
  }

  /** Caches a look-up's result for what is left of the TTL, counted from when the look-up began. */
  private remember(prefix: string, record: R | null, at: number): void {
    const ttl = Math.floor(this.ttlMs - (performance.now() - at));
    if (!this.records || !this.absent || ttl < 1) return;
    if (record && record.revokedAt === null) {
      this.records.set(prefix, { record, at }, { ttl });
      this.absent.delete(prefix);
    } else {
      this.absent.set(prefix, at, { ttl });
      this.records.delete(prefix);
    }
  }

  private noteKnown(prefix: string, exists: boolean): void {
    if (exists) this.known?.add(prefix);
    else this.known?.delete(prefix);
    this.knownChanges?.push([prefix, exists]);
  }

  /** Reads the set of prefixes again (one read at a time); a failure keeps the old set until the next interval. */
  private readKnown(): Promise<void> {
    this.knownLoad ??= (async () => {
      const at = performance.now();
      const forgotten = this.knownForgotten;
      this.knownChanges = [];
      try {
        const known = new Set(await this.loadPrefixes());
        for (const [prefix, exists] of this.knownChanges) {
          if (exists) known.add(prefix);
          else known.delete(prefix);
        }
        this.known = known;
      } catch (error) {
        this.onError(error);
      } finally {
        this.knownAt = forgotten === this.knownForgotten ? at : -Infinity;
        this.knownChanges = null;
        this.knownLoad = null;
      }
    })();
    return this.knownLoad;
  }
}
