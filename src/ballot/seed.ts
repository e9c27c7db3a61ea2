// A ballot's seed: made when the campaign opens, committed to at once, revealed at the
// draw. The commitment is the lowercase hex SHA-256 of the seed's UTF-8 text (the contract); the seed
// is 32 random bytes as 64 lowercase hex digits, so nobody can guess it from the commitment.
//
// Kept from operators until the draw: the database holds it sealed (AES-256-GCM under the server's
// secrets key, WEBHOOK_SECRET_KEY — src/webhooks/secrets.ts), and no API field returns it before the
// draw. Someone with both the database and that key could open it and predict the ranking: keeping
// the key where database operators cannot read it (a secrets manager) is what keeps the two apart.
import { createHash, randomBytes } from 'node:crypto';
import { openSecret, sealSecret } from '../webhooks/secrets';

export const SEED_BYTES = 32;

export function newSeed(): string {
  return randomBytes(SEED_BYTES).toString('hex');
}

/** The contract's commitment: lowercase hex sha256 of the seed's UTF-8 text. */
export function seedCommitment(seed: string): string {
  return createHash('sha256').update(seed, 'utf8').digest('hex');
}

export function sealSeed(seed: string, key: Buffer): string {
  return sealSecret(seed, key);
}

export function openSeed(sealed: string, key: Buffer): string {
  return openSecret(sealed, key);
}
