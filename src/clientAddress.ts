// Who the client is, by address: the key of the failed-authentication limit (admission.ts), for
// both transports (an HTTP request, or a WebSocket's upgrade request).
//
// The socket's remote address, unless that address is a proxy listed in TRUST_PROXY (nothing by
// default). Then the forwarding header is walked from the right — each proxy appends the address it
// received from — skipping the trusted ones, and the first address not trusted is the client
// (proxy-addr's rule, which decides what is trusted). Entries left of it are whatever the client
// wrote: never read. An entry that names no address (`unknown`, an obfuscated `_id`, garbage) ends
// the walk at the proxy that wrote it, which then stands for its clients.
//
// Which header: TRUST_PROXY_HEADER when set. Unset, whichever of `X-Forwarded-For` and `Forwarded`
// is present — and when both are, neither is believed: a proxy sets one of them, and the client could
// have forged the other with any address in it.
//
// The address is kept as the client wrote it (it is what the logs show); the limit counts on
// addressKey's canonical form of it.
import { isIP } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import ipaddr from 'ipaddr.js';
import proxyAddr from 'proxy-addr';
import type { Config } from './config';

/** What an HTTP request and a WebSocket's upgrade request both have. */
export interface AddressedRequest {
  readonly headers: IncomingHttpHeaders;
  readonly socket: { readonly remoteAddress?: string | undefined };
}

export type ClientAddress = (request: AddressedRequest) => string;

type Header = NonNullable<Config['trustProxy']['header']>;

/** The client address of a request, for this TRUST_PROXY setting (absent: trust no proxy). */
export function createClientAddress(trustProxy?: Config['trustProxy']): ClientAddress {
  const peer = (request: AddressedRequest) => request.socket.remoteAddress ?? 'unknown';
  if (!trustProxy?.addresses.length) return peer;
  const trusted = proxyAddr.compile([...trustProxy.addresses]);
  return (request) => {
    const address = peer(request);
    if (!trusted(address, 0)) return address;
    const header = chosenHeader(request.headers, trustProxy.header);
    return header ? walk(address, forwardedFor(request.headers, header), trusted) : address;
  };
}

/** The header to believe: the configured one, or the only one present (neither when both are). */
function chosenHeader(headers: IncomingHttpHeaders, configured: Header | undefined): Header | undefined {
  if (configured) return configured;
  const xff = headers['x-forwarded-for'] !== undefined;
  const forwarded = headers.forwarded !== undefined;
  if (xff === forwarded) return undefined;
  return xff ? 'x-forwarded-for' : 'forwarded';
}

/**
 * From the trusted peer leftwards: the first address not trusted, or the furthest one when all are
 * (proxy-addr's rule); an entry that is no address stops the walk at the last address reached.
 */
function walk(peer: string, entries: readonly string[], trusted: (address: string, hop: number) => boolean): string {
  let address = peer;
  for (let i = entries.length - 1, hop = 1; i >= 0; i -= 1, hop += 1) {
    const next = nodeAddress(entries[i]!);
    if (next === undefined) return address;
    address = next;
    if (!trusted(address, hop)) return address;
  }
  return address;
}

/** The header's entries, left to right (Node joins repeated header lines with commas). */
function forwardedFor(headers: IncomingHttpHeaders, header: Header): string[] {
  const value = headers[header];
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  return header === 'forwarded' ? forwardedElements(text) : text.split(',').map((entry) => entry.trim());
}

/**
 * RFC 7239: elements separated by commas, each `name=value` pairs separated by semicolons, a value
 * a token or a quoted string (which may hold commas and semicolons). The `for` value of each element
 * ('' when it has none, which stops the walk there).
 */
export function forwardedElements(text: string): string[] {
  const elements: string[] = [];
  let forValue: string | undefined;
  let pair = '';
  let quoted = false;
  const endPair = () => {
    const equals = pair.indexOf('=');
    if (equals > 0 && forValue === undefined && pair.slice(0, equals).trim().toLowerCase() === 'for') forValue = pair.slice(equals + 1).trim();
    pair = '';
  };
  const endElement = () => {
    endPair();
    elements.push(forValue ?? '');
    forValue = undefined;
  };
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (quoted) {
      if (c === '\\' && i + 1 < text.length) pair += text[++i];
      else if (c === '"') quoted = false;
      else pair += c;
    } else if (c === '"') quoted = true;
    else if (c === ';') endPair();
    else if (c === ',') endElement();
    else pair += c;
  }
  endElement();
  return elements;
}

/**
 * An entry as an IP address: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`, `[2001:db8::1]` or
 * `[2001:db8::1]:4711`; undefined for anything else (`unknown`, `_obfuscated`, garbage, empty).
 */
export function nodeAddress(entry: string): string | undefined {
  const [, bracketed, ipv4, port] = /^(?:\[([^\]]+)\]|([\d.]+))(?::(\d{1,5}))?$/.exec(entry.trim()) ?? [];
  if (port !== undefined && Number(port) > 65_535) return undefined;
  const address = bracketed ?? ipv4 ?? entry.trim();
  return isIP(address) ? address : undefined;
}

/** `::ffff:a.b.c.d`: an IPv4 client on a dual-stack socket, as Node spells its address. */
const IPV4_MAPPED = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;

/** The prefix length an IPv6 client is counted by when none is configured (AUTH_FAILURE_IPV6_PREFIX). */
export const DEFAULT_IPV6_PREFIX = 64;

/**
 * The key a client address is counted under by the failed-authentication limit: one spelling per
 * client, so that a client cannot start a fresh count by writing its address another way. IPv4 as
 * dotted decimal, an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) as the IPv4 address it maps; any
 * other IPv6 address as its network of `ipv6Prefix` bits, lower-case and compressed (RFC 5952), with
 * the length: `2001:db8::/64`. A /64 is what one subscriber is usually given, so every address in it
 * is one client; the zone of a link-local address is dropped with the host bits. Anything that is
 * not an address (`unknown`: a socket without one) is its own key.
 */
export function addressKey(address: string, ipv6Prefix = DEFAULT_IPV6_PREFIX): string {
  // Every request's address goes through here (admission.ts): the two common spellings — IPv4, and
  // IPv4 mapped on a dual-stack socket — are read without parsing (ipaddr.js costs 4 µs a call).
  const version = isIP(address);
  if (version === 4) return address;
  if (version === 0) return address;
  const mapped = IPV4_MAPPED.exec(address);
  if (mapped && isIP(mapped[1]!) === 4) return mapped[1]!;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${address}/${ipv6Prefix}`).toString()}/${ipv6Prefix}`;
}
