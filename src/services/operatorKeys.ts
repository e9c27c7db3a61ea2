// Operator keys: `tso_<prefix>_<secret>`, each with a role (OWNER, OPERATOR, VIEWER; what
// each may call is declared in schema.graphql and enforced by access.ts). Issued, listed and revoked
// by an OWNER; the key is shown once and only its SHA-256 is stored, as for partner keys. A
// revocation makes the key UNAUTHENTICATED here at once, on other instances and open sockets within
// API_KEY_CACHE_TTL_MS (keyCache.ts, live.ts).
import { issueApiKey, type Authenticator, type OperatorKeyRecord } from '../auth';
import type { Database } from '../db/client';
import { notFound } from '../errors';
import type { LiveUpdates } from '../live';
import type { OperatorKeyModel, OperatorRole } from '../models';
import * as validate from '../validation';
import { KeyCache } from './keyCache';

const OPERATOR_FIELDS = { id: true, name: true, role: true, createdAt: true, lastUsedAt: true, revokedAt: true } as const;

export class OperatorKeyService implements Pick<Authenticator, 'findOperatorByPrefix'> {
  private readonly keys: KeyCache<OperatorKeyRecord>;

  constructor(
    private readonly db: Database,
    keyCacheTtlMs = 0,
    onError: (error: unknown) => void = () => undefined,
    private readonly live?: LiveUpdates,
  ) {
    this.keys = new KeyCache(
      keyCacheTtlMs,
      (prefix) => this.db.prisma.operatorKey.findUnique({ where: { keyPrefix: prefix }, select: { ...OPERATOR_FIELDS, keyHash: true } }),
      (id, at) => this.db.prisma.operatorKey.update({ where: { id }, data: { lastUsedAt: at }, select: { id: true } }),
      onError,
      async () => (await this.db.prisma.operatorKey.findMany({ where: { revokedAt: null }, select: { keyPrefix: true } })).map((k) => k.keyPrefix),
    );
    live?.onKeyChanged((id) => this.keys.forget(id));
  }

  /** Issues a key with its role; the key is returned once and only its hash is stored. */
  async create(input: { name: string; role: OperatorRole }): Promise<{ key: OperatorKeyModel; apiKey: string }> {
    const name = validate.text('name', input.name, validate.LIMITS.nameLength);
    const issued = issueApiKey('operator');
    // Written, then read: an enum among the written row's returned columns is cast to text in
    // RETURNING, which Citus refuses on a reference table.
    const { id } = await this.db.prisma.operatorKey.create({ data: { name, role: input.role, keyPrefix: issued.prefix, keyHash: issued.hash }, select: { id: true } });
    const key = await this.db.prisma.operatorKey.findUniqueOrThrow({ where: { id }, select: OPERATOR_FIELDS });
    this.keys.added(issued.prefix);
    return { key, apiKey: issued.apiKey };
  }

  /** The key stops working: here at once, on other instances and open sockets within the cache TTL. Revoking twice keeps the first time. */
  async revoke(id: string): Promise<OperatorKeyModel> {
    const current = validate.isUuid(id) ? await this.db.prisma.operatorKey.findUnique({ where: { id: id.toLowerCase() }, select: { revokedAt: true } }) : null;
    if (!current) throw notFound('Operator key', id);
    await this.db.prisma.operatorKey.update({ where: { id: id.toLowerCase() }, data: { revokedAt: current.revokedAt ?? new Date() }, select: { id: true } });
    const row = await this.db.prisma.operatorKey.findUniqueOrThrow({ where: { id: id.toLowerCase() }, select: { ...OPERATOR_FIELDS, keyPrefix: true } });
    const { keyPrefix, ...key } = row;
    this.keys.removed(keyPrefix);
    this.live?.keyChanged(key.id);
    return key;
  }

  /** Every operator key, revoked ones included, oldest first. */
  list(): Promise<OperatorKeyModel[]> {
    return this.db.prisma.operatorKey.findMany({ orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], select: OPERATOR_FIELDS });
  }

  findByIds(ids: readonly string[]): Promise<OperatorKeyModel[]> {
    return this.db.prisma.operatorKey.findMany({ where: { id: { in: [...ids] } }, select: OPERATOR_FIELDS });
  }

  /** The key's record, cached (keyCache.ts); `loadedSince`: only one read at or after that instant will do. */
  findOperatorByPrefix(prefix: string, loadedSince?: number): Promise<OperatorKeyRecord | null> {
    return this.keys.find(prefix, loadedSince);
  }

  /** Authenticating a key with this prefix costs no look-up (keyCache.ts). */
  isKeyCached(prefix: string): boolean {
    return this.keys.has(prefix);
  }

  /** Whether an operator key with this prefix exists, from memory (keyCache.ts; the failed-authentication limit). */
  keyExists(prefix: string, waitUntil: number): Promise<boolean> {
    return this.keys.exists(prefix, waitUntil);
  }

  /** Records that the key authenticated a request (keyCache.ts). */
  touch(id: string): void {
    this.keys.touch(id);
  }
}
