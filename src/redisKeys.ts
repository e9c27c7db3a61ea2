// Every name Tessera uses in Redis begins with the deployment's prefix, so that deployments sharing
// one Redis never share a count or a signal:
//   <prefix>rate:<points per second>:<key id>    a key's per-second bucket             rateLimit.ts
//   <prefix>burst:<points per second>:<key id>   its burst bucket                      rateLimit.ts
//   <prefix>auth-failures:<client>               failed authentications of a client    rateLimit.ts (clientAddress.ts's addressKey)
//   <prefix>campaign-changed                     pub/sub: a campaign's figures changed live.ts
//   <prefix>partner-key-changed                  pub/sub: a partner's key changed      live.ts
//
// The prefix is REDIS_KEY_PREFIX when set, taken as written. Unset, it is `tessera:<database>:`, the
// database named by the URL the server connects with: the instances of one deployment share their
// database, and so their counts; deployments on different databases count apart. Two deployments
// on different PostgreSQL servers whose databases have the same name would share the prefix: they
// set REDIS_KEY_PREFIX.
import { parseHosts } from './db/hosts';

/** The prefix when no database name can be read (and what a direct caller of createRateLimits gets). */
export const DEFAULT_REDIS_KEY_PREFIX = 'tessera:';

/**
 * `tessera:<database>:` for this database URL: the database in its path, else its user (libpq's
 * default database), else `postgres`. The name is percent-encoded as in a URL, so a `:` in it
 * cannot make two names one prefix.
 */
export function redisKeyPrefixFor(databaseUrl: string): string {
  try {
    const url = new URL(parseHosts(databaseUrl).urls[0]!);
    const database = decodeURIComponent(url.pathname.slice(1)) || decodeURIComponent(url.username) || 'postgres';
    return `${DEFAULT_REDIS_KEY_PREFIX}${encodeURIComponent(database)}:`;
  } catch {
    return DEFAULT_REDIS_KEY_PREFIX;
  }
}
