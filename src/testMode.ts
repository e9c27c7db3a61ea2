// Test mode: test campaigns beside live ones, seen through a partner's test key.
//
// A test campaign's id is a version 8 UUID with a version 7 layout (48 bits of milliseconds, then
// random bits): live campaigns have version 7 (or 4, made before version 7 ids), so every object
// that carries its campaign's id — an allocation, an entry, a webhook event — says which mode it
// belongs to, and whether a key may see it is decided from the id alone: no look-up, nothing on the
// claim path but one character compared (auth.ts, inScope). The campaigns row says the same in its
// `test` column, and a CHECK constraint (campaigns_test_id) keeps the two in agreement.
import { randomFillSync } from 'node:crypto';

/** Whether a campaign id (any case) is a test campaign's: its version digit is 8. */
export const isTestCampaignId = (campaignId: string): boolean => campaignId.charCodeAt(14) === 0x38; // '8'

/** A new test campaign's id: the time now in milliseconds, 74 random bits, version 8, RFC 9562's variant. */
export function newTestCampaignId(now = Date.now()): string {
  const bytes = Buffer.alloc(16);
  randomFillSync(bytes, 6);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
