// The Tessera-Signature header: `t=<unix seconds>,v1=<lowercase hex HMAC-SHA256 of "<t>.<raw body>">`,
// keyed with the endpoint's whole secret string (`whsec_…` included, as UTF-8). The timestamp is
// inside the signed text, so a receiver that rejects old timestamps cannot be fed a replayed request.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** How old (or how far ahead) a timestamp a receiver accepts by default: Stripe's and Svix's 5 minutes. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;
const HEX_SHA256 = /^[0-9a-f]{64}$/;

/** A new endpoint secret, shown to the operator once: `whsec_<base64url of 32 random bytes>`. */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64url')}`;
}

const unixSeconds = (at: Date): number => Math.floor(at.getTime() / 1000);

const hmacHex = (secret: string, t: number, rawBody: string): string =>
  createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex');

export function signatureHeader(secret: string, rawBody: string, at: Date): string {
  const t = unixSeconds(at);
  return `t=${t},v1=${hmacHex(secret, t, rawBody)}`;
}

export type VerifyResult = { ok: true } | { ok: false; reason: 'malformed' | 'stale' | 'mismatch' };

/**
 * What a receiver does: parse the header, refuse a timestamp more than `toleranceSeconds` away from
 * `now` (either way), and compare the signature in constant time. Several v1= values are accepted
 * (any may match), so a receiver keeps working while a secret is being rotated.
 */
export function verifySignature(
  header: string | undefined,
  rawBody: string,
  secret: string,
  { toleranceSeconds = DEFAULT_TOLERANCE_SECONDS, now = new Date() }: { toleranceSeconds?: number; now?: Date } = {},
): VerifyResult {
  let t: number | undefined;
  const signatures: string[] = [];
  for (const part of (header ?? '').split(',')) {
    const [key, value = ''] = part.trim().split('=', 2);
    if (key === 't' && /^\d{1,12}$/.test(value)) t = Number(value);
    else if (key === 'v1' && HEX_SHA256.test(value)) signatures.push(value);
  }
  if (t === undefined || signatures.length === 0) return { ok: false, reason: 'malformed' };
  if (Math.abs(unixSeconds(now) - t) > toleranceSeconds) return { ok: false, reason: 'stale' };
  // Hex strings of equal length (checked by HEX_SHA256): timingSafeEqual's precondition holds.
  const expected = Buffer.from(hmacHex(secret, t, rawBody));
  const matches = signatures.some((signature) => timingSafeEqual(Buffer.from(signature), expected));
  return matches ? { ok: true } : { ok: false, reason: 'mismatch' };
}
