// Which webhook endpoint URLs Tessera accepts, and which addresses it will connect to.
//
// Every environment: an absolute http(s) URL of at most 2048 characters, with no credentials
// (user:password@ would be stored and shown in clear) and no fragment (never sent; a sign of a
// pasted browser link).
//
// Outside production: https anywhere, and plain http only to 127.0.0.1, localhost or [::1] — a
// receiver on the developer's own machine.
//
// Production: https only, and no private address ranges (SSRF protection). A receiver must be on
// a public unicast address: loopback, private (RFC 1918), carrier-grade NAT, IPv6 unique-local and
// link-local (with the cloud metadata service at 169.254.169.254), multicast, broadcast,
// unspecified, documentation/reserved and the IPv6 transition ranges that embed an IPv4 address
// (6to4, Teredo, NAT64) are refused; an IPv4-mapped IPv6 address (::ffff:10.0.0.1) is judged as
// the IPv4 address it is. An address literal in the URL is refused when the endpoint is created;
// a host name is judged at connect time on EVERY address it resolves to, and the connection goes
// to the address that was checked (deliver.ts), so a name that resolves differently later (DNS
// rebinding) gains nothing.
// WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, for on-premise receivers, lets production reach the
// private networks (loopback, RFC 1918, carrier-grade NAT, unique-local). The other ranges stay
// refused: nothing there is a webhook receiver, and link-local holds cloud metadata services.
//
// The ranges are ipaddr.js's `range()` classification, not CIDR tables of our own; the one block
// named here is IPv6's global unicast 2000::/3, which ipaddr.js does not single out.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export const MAX_URL_LENGTH = 2048;

/** The only ipaddr.js range a production receiver may be in without WEBHOOK_ALLOW_PRIVATE_NETWORKS. */
const PUBLIC_RANGE = 'unicast';
/** The ranges WEBHOOK_ALLOW_PRIVATE_NETWORKS opens (ipaddr.js range names). */
const PRIVATE_NETWORK_RANGES: ReadonlySet<string> = new Set(['loopback', 'private', 'carrierGradeNat', 'uniqueLocal']);
/** Where plain http is allowed outside production (URL host names: IPv6 in brackets). */
const LOCAL_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '[::1]']);

export interface UrlPolicy {
  production: boolean;
  allowPrivate?: boolean;
}

/** A refusal names `address` when the URL holds a forbidden address literal. */
export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string; address?: string };

/**
 * IPv6 addresses outside 2000::/3 are not assigned as global unicast (RFC 4291); ipaddr.js calls
 * some of them `unicast` (e.g. the deprecated IPv4-compatible ::10.0.0.1), so they are named here.
 */
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/** The ipaddr.js range of an address, IPv4-mapped IPv6 unwrapped; null when it is not an address. */
function rangeOf(ip: string): string | null {
  if (!ipaddr.isValid(ip)) return null;
  const parsed = ipaddr.parse(ip);
  if (parsed instanceof ipaddr.IPv4) return parsed.range();
  // Only the IPv4-mapped form (::ffff:a.b.c.d) is that IPv4 address; ipaddr.process() would also
  // unwrap the deprecated IPv4-compatible ::a.b.c.d, which is no route to a.b.c.d.
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().range();
  if (!parsed.match(IPV6_GLOBAL_UNICAST) && parsed.range() === PUBLIC_RANGE) return 'unassigned';
  return parsed.range();
}

/**
 * Whether production must refuse to connect to `ip` (see the rule above). Anything that is not an
 * address is refused too.
 */
export function isForbiddenAddress(ip: string, { allowPrivate = false }: { allowPrivate?: boolean } = {}): boolean {
  const range = rangeOf(ip);
  if (range === PUBLIC_RANGE) return false;
  return !(allowPrivate && range !== null && PRIVATE_NETWORK_RANGES.has(range));
}

export function checkEndpointUrl(url: string, { production, allowPrivate = false }: UrlPolicy): UrlCheck {
  const refuse = (reason: string, address?: string): UrlCheck => ({ ok: false, reason, ...(address === undefined ? {} : { address }) });
  if (url.length > MAX_URL_LENGTH) return refuse(`the URL is longer than ${MAX_URL_LENGTH} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse('not an absolute URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return refuse('the URL must be https (or http to a local receiver outside production)');
  if (parsed.username || parsed.password) return refuse('the URL must not contain credentials');
  // An empty fragment ("…/#") leaves `hash` empty: look at the text as well.
  if (parsed.hash || url.includes('#')) return refuse('the URL must not contain a fragment (#…)');
  if (production) {
    if (parsed.protocol !== 'https:') return refuse('production endpoints must use https');
    const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host) && isForbiddenAddress(host, { allowPrivate })) {
      return refuse(`${host} is a private or reserved address (${rangeOf(host)}); production endpoints must be public`, host);
    }
  } else if (parsed.protocol === 'http:' && !LOCAL_HOSTS.has(parsed.hostname)) {
    return refuse('outside production, http is allowed only to 127.0.0.1, localhost or [::1]; use https');
  }
  return { ok: true, url: parsed };
}
