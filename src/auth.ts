// Who is calling: an operator — ADMIN_API_KEY (an OWNER) or an operator key (createOperatorKey,
// with its role) — or a partner (a key issued by createPartner).
//
// Partner keys look like `tsp_<12 hex prefix>_<secret>`, operator keys `tso_<12 hex prefix>_<secret>`.
// A partner's test key is `tsp_test_<12 hex prefix>_<secret>`: the same partner, in test
// mode — it sees test campaigns only, and its live key none of them (testMode.ts).
// The prefix finds the row; the SHA-256 of the whole key is compared in constant time with the
// stored hash; the key itself is never stored or logged. Every failure — no header, malformed,
// unknown, wrong secret, revoked — gets the same answer.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { apiError, ErrorCode } from './errors';
import type { OperatorKeyModel, OperatorRole, PartnerModel } from './models';
import { isTestCampaignId } from './testMode';

export type Viewer =
  /** An operator: ADMIN_API_KEY (role OWNER, operator null) or an operator key. */
  | { readonly kind: 'admin'; readonly partnerId: string; readonly role: OperatorRole; readonly operator: OperatorKeyModel | null }
  /**
   * A partner; `scope` is the campaigns a scoped key may see and touch (null: every campaign);
   * `test`: the partner's test key, which sees test campaigns only (the live key: live ones only).
   */
  | {
      readonly kind: 'partner';
      readonly test: boolean;
      readonly partnerId: string;
      readonly partner: PartnerModel;
      readonly rateLimit: number | null;
      readonly scope: ReadonlySet<string> | null;
    };

/**
 * Whether the caller may see and touch the campaign: operators always; a partner within its scope,
 * and in its key's mode (a test key test campaigns, a live key live ones). Outside, a campaign is
 * answered exactly as one that does not exist.
 */
export const inScope = (viewer: Viewer, campaignId: string): boolean =>
  viewer.kind === 'admin' || (isTestCampaignId(campaignId) === viewer.test && (viewer.scope === null || viewer.scope.has(campaignId.toLowerCase())));

/** The id of the key a revocation or rotation concerns: the partner's, or the operator key's. */
export const keyOwnerOf = (viewer: Viewer): string | undefined => (viewer.kind === 'partner' ? viewer.partnerId : viewer.operator?.id);

/** Allocations made with the admin key belong to this partner row (created by the first migration). */
export const OPERATOR_PARTNER_ID = '00000000-0000-0000-0000-000000000000';

// The prefix of a test key is `test_` and its 12 hex digits: the key cache and the failed-
// authentication limit tell the two kinds apart by it (services/partnerKeys.ts).
const KEY_PATTERN = /^ts([po])_((?:test_)?[0-9a-f]{12})_[A-Za-z0-9_-]{43}$/;
/** A test key's prefix, as the key cache holds it. */
export const TEST_KEY_PREFIX = 'test_';

export interface IssuedKey {
  apiKey: string;
  prefix: string;
  hash: string;
}

/** A new key: `tsp_…` for a partner, `tsp_test_…` for a partner's test key, `tso_…` for an operator. `prefix` is what the key's row is found by. */
export function issueApiKey(kind: 'partner' | 'partner-test' | 'operator' = 'partner'): IssuedKey {
  const prefix = `${kind === 'partner-test' ? TEST_KEY_PREFIX : ''}${randomBytes(6).toString('hex')}`;
  const apiKey = `ts${kind === 'operator' ? 'o' : 'p'}_${prefix}_${randomBytes(32).toString('base64url')}`;
  return { apiKey, prefix, hash: sha256Hex(apiKey) };
}

export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');
const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();

/** The admin key's digest, made once per key rather than once per request. */
const adminDigests = new Map<string, Buffer>();
const adminDigest = (key: string): Buffer => {
  let digest = adminDigests.get(key);
  if (!digest) adminDigests.set(key, (digest = sha256(key)));
  return digest;
};
const NO_SUCH_KEY = sha256Hex('no such key');

export const unauthenticated = () =>
  apiError(ErrorCode.UNAUTHENTICATED, 'A valid API key is required: send the header "Authorization: Bearer <api key>".');

export interface PartnerKeyRecord extends PartnerModel {
  /** The record of the partner's test key (found by a `test_` prefix). */
  test: boolean;
  keyHash: string;
  revokedAt: Date | null;
  rateLimit: number | null;
  scoped: boolean;
  campaignScope: string[];
}

export interface OperatorKeyRecord extends OperatorKeyModel {
  keyHash: string;
}

export interface Authenticator {
  adminApiKey: string;
  findPartnerByPrefix(prefix: string): Promise<PartnerKeyRecord | null>;
  findOperatorByPrefix(prefix: string): Promise<OperatorKeyRecord | null>;
}

/** The record is there, not revoked, and its hash is the token's: the same work whether or not the prefix exists. */
function matchesKey<R extends { keyHash: string; revokedAt: Date | null }>(digest: Buffer, record: R | null): record is R {
  const matches = timingSafeEqual(digest, Buffer.from(record?.keyHash ?? NO_SUCH_KEY, 'hex'));
  return record !== null && matches && record.revokedAt === null;
}

const bearerToken = (header: string | undefined): string | undefined => /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];

/** What a request's key says it is, read without a look-up: the admin key, a partner's or an operator key's prefix, or nothing well-formed (null). */
export type KeyClaim = { readonly kind: 'admin' } | { readonly kind: 'partner' | 'operator'; readonly prefix: string } | null;

/**
 * The claim of the key in an Authorization header, for the failed-authentication limit
 * (admission.ts): a `tsp_`/`tso_` key by its form, the admin key in memory (compared in constant
 * time, as authenticate does). It proves nothing: authenticate decides. The form is read first, so
 * a partner's request — every claim — costs no second digest of its key.
 */
export function keyClaim(header: string | undefined, adminApiKey: string): KeyClaim {
  const token = bearerToken(header);
  if (!token) return null;
  const [, kind, prefix] = KEY_PATTERN.exec(token) ?? [];
  if (prefix) return kind === 'o' && prefix.startsWith(TEST_KEY_PREFIX) ? null : { kind: kind === 'o' ? 'operator' : 'partner', prefix };
  return timingSafeEqual(sha256(token), adminDigest(adminApiKey)) ? { kind: 'admin' } : null;
}

export async function authenticate(header: string | undefined, auth: Authenticator): Promise<Viewer> {
  const token = bearerToken(header);
  if (!token) throw unauthenticated();
  // One digest of the token per request, compared in constant time with the admin key's and the
  // partner record's (digests of equal length: the comparison time says nothing about the key).
  const digest = sha256(token);
  if (timingSafeEqual(digest, adminDigest(auth.adminApiKey))) return { kind: 'admin', partnerId: OPERATOR_PARTNER_ID, role: 'OWNER', operator: null };
  const [, kind, prefix] = KEY_PATTERN.exec(token) ?? [];
  if (!prefix) throw unauthenticated();
  if (kind === 'o') {
    if (prefix.startsWith(TEST_KEY_PREFIX)) throw unauthenticated();
    const record = await auth.findOperatorByPrefix(prefix);
    if (!matchesKey(digest, record)) throw unauthenticated();
    const { keyHash: _hash, ...operator } = record;
    return { kind: 'admin', partnerId: OPERATOR_PARTNER_ID, role: operator.role, operator };
  }
  const record = await auth.findPartnerByPrefix(prefix);
  if (!matchesKey(digest, record)) throw unauthenticated();
  const { id, name, createdAt, rateLimit, scoped, campaignScope, test } = record;
  return { kind: 'partner', test, partnerId: id, partner: { id, name, createdAt }, rateLimit, scope: scoped ? new Set(campaignScope) : null };
}
