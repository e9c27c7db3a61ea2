// Who is calling: the admin (ADMIN_API_KEY) or a partner (a key issued by createPartner).
//
// Partner keys look like `tsp_<12 hex prefix>_<secret>`. The prefix finds the row; the SHA-256 of the
// whole key is compared in constant time with the stored hash; the key itself is never stored or
// logged. Every failure — no header, malformed, unknown, wrong secret, revoked — gets the same answer.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { apiError, ErrorCode } from './errors';
import type { PartnerModel } from './models';

export type Viewer =
  | { readonly kind: 'admin'; readonly partnerId: string }
  | { readonly kind: 'partner'; readonly partnerId: string; readonly partner: PartnerModel; readonly rateLimit: number | null };

/** Allocations made with the admin key belong to this partner row (created by the first migration). */
export const OPERATOR_PARTNER_ID = '00000000-0000-0000-0000-000000000000';

const KEY_PATTERN = /^tsp_([0-9a-f]{12})_[A-Za-z0-9_-]{43}$/;

export interface IssuedKey {
  apiKey: string;
  prefix: string;
  hash: string;
}

export function issueApiKey(): IssuedKey {
  const prefix = randomBytes(6).toString('hex');
  const apiKey = `tsp_${prefix}_${randomBytes(32).toString('base64url')}`;
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
  keyHash: string;
  revokedAt: Date | null;
  rateLimit: number | null;
}

export interface Authenticator {
  adminApiKey: string;
  findPartnerByPrefix(prefix: string): Promise<PartnerKeyRecord | null>;
}

export async function authenticate(header: string | undefined, auth: Authenticator): Promise<Viewer> {
  const token = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
  if (!token) throw unauthenticated();
  // One digest of the token per request, compared in constant time with the admin key's and the
  // partner record's (digests of equal length: the comparison time says nothing about the key).
  const digest = sha256(token);
  if (timingSafeEqual(digest, adminDigest(auth.adminApiKey))) return { kind: 'admin', partnerId: OPERATOR_PARTNER_ID };
  const prefix = KEY_PATTERN.exec(token)?.[1];
  if (!prefix) throw unauthenticated();
  const record = await auth.findPartnerByPrefix(prefix);
  const expected = record?.keyHash ?? NO_SUCH_KEY; // same work whether or not the prefix exists
  const matches = timingSafeEqual(digest, Buffer.from(expected, 'hex'));
  if (!record || !matches || record.revokedAt !== null) throw unauthenticated();
  const { id, name, createdAt, rateLimit } = record;
  return { kind: 'partner', partnerId: id, partner: { id, name, createdAt }, rateLimit };
}
