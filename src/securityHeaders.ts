// Security headers for the pages a browser renders: GraphiQL (GET /graphql from a browser, and
// /graphiql/*) and the operators' console (/console). The API's own answers (POST /graphql, JSON)
// need none of this.
//
//   Content-Security-Policy   everything from this server only: scripts from its files, inline only
//                             by the SHA-256 of their text (computed at start-up), never eval; no
//                             plugins, no <base>, no framing (clickjacking); fetch and graphql-ws to
//                             the same host only
//   X-Frame-Options: DENY     frame-ancestors 'none' for browsers older than CSP 2
//   X-Content-Type-Options    nosniff: a file runs as a script or a stylesheet only if its type says so
//   Referrer-Policy           no-referrer: the console's and GraphiQL's addresses leave with no request
//
// Written by hand, not with helmet: these are five headers, one built per request (the WebSocket
// source names the request's host, and GraphiQL's page has a nonce of its own); helmet's other
// defaults (Strict-Transport-Security, Cross-Origin-*-Policy, …) would each have to be weighed and
// mostly turned off for a server often reached over plain HTTP on a closed network — and it would
// be one more dependency for `npm audit` to watch.
import { createHash, randomBytes } from 'node:crypto';
import type { RequestHandler } from 'express';

/** The CSP source that allows one inline script (or style) whose text is exactly `source`. */
export function cspHash(source: string): string {
  return `'sha256-${createHash('sha256').update(source, 'utf8').digest('base64')}'`;
}

/** A Host header as browsers send it: a name or IPv4 address, or an [IPv6] address; and a port. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

export interface PagePolicy {
  /** Sources for inline <script> elements: cspHash(text) of each. */
  readonly inlineScripts?: readonly string[];
  /** <style> elements carrying this response's nonce (`res.locals.cspNonce`) are allowed. */
  readonly styleNonce?: boolean;
  /** style="…" attributes are allowed (CSS only, never script): the console sizes its fill bars with them. */
  readonly styleAttributes?: boolean;
}

/** The Content-Security-Policy of a page served to `host` (undefined or malformed: 'self' only). */
export function contentSecurityPolicy(policy: PagePolicy, host: string | undefined, nonce?: string): string {
  // CSP 3 lets 'self' match ws: and wss: on the same host, older browsers do not: name them.
  const sockets = host && HOST.test(host) ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'self'",
    ['script-src', "'self'", ...(policy.inlineScripts ?? [])].join(' '),
    ['style-src', "'self'", ...(nonce ? [`'nonce-${nonce}'`] : [])].join(' '),
    ...(policy.styleAttributes ? ["style-src-attr 'unsafe-inline'"] : []),
    // GraphiQL's stylesheet carries its fonts and a few images as data: URLs.
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self'${sockets}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Middleware: the headers above on every response it sees. */
export function securityHeaders(policy: PagePolicy = {}): RequestHandler {
  return (req, res, next) => {
    let nonce: string | undefined;
    if (policy.styleNonce) {
      nonce = randomBytes(16).toString('base64');
      res.locals.cspNonce = nonce;
    }
    res.setHeader('Content-Security-Policy', contentSecurityPolicy(policy, req.headers.host, nonce));
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    next();
  };
}

/** The console: its script and stylesheet from /console, nothing inline but its fill bars' widths. */
export const consoleSecurityHeaders = (): RequestHandler => securityHeaders({ styleAttributes: true });
