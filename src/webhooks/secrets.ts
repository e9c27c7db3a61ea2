// Endpoint secrets at rest: AES-256-GCM under WEBHOOK_SECRET_KEY. Tessera must sign with the secret
// itself, so it cannot keep only a hash as it does for API keys; a copy of the database alone does
// not give the secrets away. GCM authenticates as well as encrypts: a changed value, or the wrong
// key, fails to open instead of yielding a wrong secret.
//
// Sealed format: `v1:<iv>:<tag>:<ciphertext>`, each base64url; the version names the algorithm,
// so another can be introduced beside it later.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config';

const VERSION = 'v1';
const ALGORITHM = 'aes-256-gcm';
export const WEBHOOK_KEY_BYTES = 32;
/** 96-bit IVs are GCM's native size; random ones are safe far beyond the number of endpoints we seal. */
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const WEBHOOK_KEY_FILE = 'webhook-secret-key';
const ENV_NAME = 'WEBHOOK_SECRET_KEY';

function assertKey(key: Buffer): void {
  if (key.length !== WEBHOOK_KEY_BYTES) throw new Error(`The webhook secret key must be ${WEBHOOK_KEY_BYTES} bytes (got ${key.length})`);
}

export function sealSecret(plain: string, key: Buffer): string {
  assertKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, iv);
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return [VERSION, ...[iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'))].join(':');
}

export function openSecret(sealed: string, key: Buffer): string {
  assertKey(key);
  const parts = sealed.split(':');
  if (parts.length !== 4 || parts[0] !== VERSION) throw new Error(`Not a sealed webhook secret (expected "${VERSION}:<iv>:<tag>:<ciphertext>")`);
  const [iv, tag, ciphertext] = parts.slice(1).map((part) => Buffer.from(part, 'base64url')) as [Buffer, Buffer, Buffer];
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new Error('Not a sealed webhook secret (bad IV or tag length)');
  const decipher = createDecipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch {
    // OpenSSL says only "Unsupported state or unable to authenticate data"; these are the two causes.
    throw new Error(`The webhook secret could not be opened: it was altered, or ${ENV_NAME} is not the key it was sealed with`);
  }
}

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
/** 32 bytes in base64 (padded or not) or base64url. */
const BASE64_KEY = /^[A-Za-z0-9+/_-]{43}=?$/;

/** The key in `value` (64 hex digits or base64 of 32 bytes), or an error naming `source`. */
function parseKey(value: string, source: string): Buffer {
  const text = value.trim();
  if (HEX_KEY.test(text)) return Buffer.from(text, 'hex');
  // Node's base64 decoder reads the URL-safe alphabet too.
  if (BASE64_KEY.test(text)) return Buffer.from(text, 'base64');
  throw new ConfigError(`${source} must be ${WEBHOOK_KEY_BYTES} bytes as 64 hex digits or base64 (make one with \`openssl rand -base64 32\`)`);
}

/**
 * The key that seals endpoint secrets, from WEBHOOK_SECRET_KEY. Production requires it. Elsewhere a
 * missing key is generated once and kept in `<stateDir>/webhook-secret-key`, so the secrets sealed
 * before a restart still open after it.
 */
export function webhookKeyFrom(value: string | undefined, { production, stateDir }: { production: boolean; stateDir: string }): Buffer {
  if (value) return parseKey(value, ENV_NAME);
  if (production) {
    throw new ConfigError(`NODE_ENV=production requires ${ENV_NAME}: the key that encrypts webhook secrets is never generated in production.`);
  }
  return generatedKey(stateDir);
}

function generatedKey(stateDir: string): Buffer {
  const file = path.join(stateDir, WEBHOOK_KEY_FILE);
  // A file that is there but unreadable as a key is an error, never replaced: the secrets sealed
  // with it would no longer open.
  if (existsSync(file)) return parseKey(readFileSync(file, 'utf8'), file);
  const text = randomBytes(WEBHOOK_KEY_BYTES).toString('base64');
  mkdirSync(stateDir, { recursive: true });
  // As config.ts does for the admin key: written whole under another name, then linked into place —
  // link() fails if the file exists, so of several processes starting together one key wins and
  // every process reads that one.
  const draft = `${file}.${process.pid}`;
  writeFileSync(draft, `${text}\n`, { mode: 0o600 });
  try {
    linkSync(draft, file);
    return Buffer.from(text, 'base64');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return parseKey(readFileSync(file, 'utf8'), file);
  } finally {
    unlinkSync(draft);
  }
}
