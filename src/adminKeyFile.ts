// The generated admin key's file: outside production, a missing ADMIN_API_KEY is generated once and
// kept in `.tessera/admin-api-key` beside the embedded database, so a restart keeps the key an
// operator already pasted into GraphiQL.
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Where a generated admin key is kept: beside the embedded database's folder (`.tessera/admin-api-key`). */
export const adminKeyFile = (embeddedDir: string): string => path.join(path.dirname(path.resolve(embeddedDir)), 'admin-api-key');

/** The key kept in adminKeyFile(embeddedDir), or a new one written there when none (of 16 characters or more) is. */
export function generatedAdminKey(embeddedDir: string): string {
  const file = adminKeyFile(embeddedDir);
  const stateDir = path.dirname(file);
  if (existsSync(file)) {
    const saved = readFileSync(file, 'utf8').trim();
    if (saved.length >= 16) return saved;
  }
  const key = `tsa_${randomBytes(24).toString('base64url')}`;
  mkdirSync(stateDir, { recursive: true });
  // Written whole under another name, then linked into place — link() fails if the file exists: of
  // several processes starting together, one key wins and every process reads that one.
  const draft = `${file}.${process.pid}`;
  writeFileSync(draft, `${key}\n`, { mode: 0o600 });
  try {
    linkSync(draft, file);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return readFileSync(file, 'utf8').trim();
  } finally {
    unlinkSync(draft);
  }
}
