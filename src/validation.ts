// Input validation, in one place, with messages that say what is allowed. Every limit here is part
// of the API (docs in schema.graphql); the database repeats the important ones as CHECKs.
import { InvalidInput } from './errors';
import type { JsonValue } from './db/json';
import type { WebhookEvent } from './generated/graphql';
import { checkEndpointUrl, type UrlPolicy } from './webhooks/urlPolicy';

export const LIMITS = {
  nameLength: 200,
  holderLength: 256,
  metadataBytes: 16 * 1024,
  idempotencyKeyLength: 255,
  codeLength: 128,
  codesPerLoad: 10_000,
  /** generateTickets' count per call, and createTestCopy's tickets (one such load). */
  generateCount: 1_000_000,
  prefixLength: 64,
  pageSize: 100,
  defaultPageSize: 20,
  perHolderLimit: 1_000_000,
  metadataDepth: 32,
  holdSeconds: 86_400,
  /** A campaign's maxHoldSeconds: 30 days. */
  maxHoldSeconds: 2_592_000,
  ticketsPerClaim: 100,
  quota: 10_000_000,
  lowStockThreshold: 10_000_000,
  /** Live (not deleted) webhook endpoints per partner, and for the operator's own. */
  webhooksPerOwner: 20,
  /** Every date argument, and every timestamp in a page cursor, falls in these years (UTC). */
  earliestYear: 1970,
  latestYear: 9999,
} as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Printable ASCII, no spaces at either end: safe to log, to compare and to put in a header. */
const PRINTABLE_KEY = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;
/**
 * Control characters (Unicode category Cc: C0, DEL, C1) and format characters (Cf: the bidi
 * controls U+202A-U+202E and U+2066-U+2069, the zero-width U+200B-U+200D and U+2060, U+FEFF, the
 * soft hyphen…) have no place in names, holders, codes or URLs. A format character is invisible:
 * holders compare exactly, so `alice` and `alice` followed by U+200B would be two holders that
 * display alike in the console and the CSV export. Every text input that refuses one refuses both,
 * through this one pattern.
 */
const CONTROL_OR_FORMAT = /[\p{Cc}\p{Cf}]/u;
/** What the refusals say of CONTROL_OR_FORMAT. */
const CONTROL_OR_FORMAT_TEXT = 'control characters or format characters (such as U+200B or U+202E)';

export const isUuid = (id: string): boolean => UUID.test(id);

/** Length in characters (Unicode code points), as PostgreSQL's char_length counts them. */
const characters = (value: string): number => [...value].length;
/** A lone UTF-16 surrogate cannot be stored as UTF-8; PostgreSQL would get U+FFFD instead. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function text(field: string, value: string, max: number): string {
  if (value.length === 0 || value.trim().length === 0) throw new InvalidInput(field, `${field} must not be empty.`);
  if (characters(value) > max) throw new InvalidInput(field, `${field} must be at most ${max} characters.`);
  if (CONTROL_OR_FORMAT.test(value) || LONE_SURROGATE.test(value)) {
    throw new InvalidInput(field, `${field} must not contain ${CONTROL_OR_FORMAT_TEXT}, nor unpaired surrogates.`);
  }
  return value;
}

export function idempotencyKey(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  if (value.length > LIMITS.idempotencyKeyLength || !PRINTABLE_KEY.test(value)) {
    throw new InvalidInput(
      'idempotencyKey',
      `idempotencyKey must be 1 to ${LIMITS.idempotencyKeyLength} printable ASCII characters, without spaces at either end.`,
    );
  }
  return value;
}

/**
 * What PostgreSQL cannot store in a string: NUL (a TEXT column refuses it with 22021, jsonb with
 * 22P05) and unpaired UTF-16 surrogates (jsonb refuses the `\ud800` escape JSON.stringify writes for
 * one; a TEXT column would silently get U+FFFD instead). Exported for every path that stores user
 * text, e.g. as jsonb.
 */
export function unstorable(value: string): 'NUL' | 'surrogate' | null {
  if (value.includes('\u0000')) return 'NUL';
  if (LONE_SURROGATE.test(value)) return 'surrogate';
  return null;
}

const UNSTORABLE_IN_METADATA = {
  NUL: 'metadata must not contain NUL characters (\\u0000), in a value or a key.',
  surrogate: 'metadata must not contain unpaired UTF-16 surrogates (\\uD800 to \\uDFFF without their pair), in a value or a key.',
} as const;

/**
 * One walk over a JSON value, without recursion (a 5,000-deep value must not blow the stack): its
 * nesting depth, and every string and key PostgreSQL's jsonb could not store.
 */
function jsonProblem(value: JsonValue, depthLimit: number): string | null {
  const stack: [JsonValue, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node === 'string') {
      const problem = unstorable(node);
      if (problem) return UNSTORABLE_IN_METADATA[problem];
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    if (depth > depthLimit) return `metadata must be nested at most ${depthLimit} levels deep.`;
    if (Array.isArray(node)) {
      for (const child of node) stack.push([child, depth + 1]);
      continue;
    }
    for (const [key, child] of Object.entries(node)) {
      const problem = unstorable(key);
      if (problem) return UNSTORABLE_IN_METADATA[problem];
      stack.push([child, depth + 1]);
    }
  }
  return null;
}

export function metadata(value: JsonValue | null | undefined): JsonValue | null {
  if (value === null || value === undefined) return null;
  const problem = jsonProblem(value, LIMITS.metadataDepth);
  if (problem) throw new InvalidInput('metadata', problem);
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > LIMITS.metadataBytes) {
    throw new InvalidInput('metadata', `metadata must be at most ${LIMITS.metadataBytes} bytes of JSON (got ${bytes}).`);
  }
  return value;
}

export function intInRange(field: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidInput(field, `${field} must be an integer from ${min} to ${max}.`);
  }
  return value;
}

/** An optional setting: null when left out or null, else an integer from `min` to `max`. */
export function optionalIntInRange(field: string, value: number | null | undefined, min: number, max: number): number | null {
  return value === null || value === undefined ? null : intInRange(field, value, min, max);
}

export function pageSize(first: number | null | undefined): number {
  if (first === null || first === undefined) return LIMITS.defaultPageSize;
  return intInRange('first', first, 0, LIMITS.pageSize);
}

export function codes(values: readonly string[]): string[] {
  if (values.length === 0 || values.length > LIMITS.codesPerLoad) {
    throw new InvalidInput('codes', `codes must hold 1 to ${LIMITS.codesPerLoad} codes per call (got ${values.length}).`);
  }
  values.forEach((code, index) => {
    if (code.length === 0 || characters(code) > LIMITS.codeLength || CONTROL_OR_FORMAT.test(code) || LONE_SURROGATE.test(code) || code.trim() !== code) {
      throw new InvalidInput(
        'codes',
        `codes[${index}] must be 1 to ${LIMITS.codeLength} characters, without ${CONTROL_OR_FORMAT_TEXT}, nor spaces at either end.`,
      );
    }
  });
  return [...values];
}

export function prefix(value: string | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (characters(value) > LIMITS.prefixLength || CONTROL_OR_FORMAT.test(value) || LONE_SURROGATE.test(value) || value.trim() !== value) {
    throw new InvalidInput('prefix', `prefix must be at most ${LIMITS.prefixLength} characters, without ${CONTROL_OR_FORMAT_TEXT}, nor spaces.`);
  }
  return value;
}

/**
 * A DateTime argument: years PostgreSQL stores and people mean, in UTC. The DateTime scalar alone
 * accepts year 0000 (PostgreSQL: 22008), and an offset carries 9999-12-31T23:59:59-23:59 into year
 * 10000. Every DateTime argument of every query and mutation passes here before it is used.
 */
export function date<T extends Date | null | undefined>(field: string, value: T): T {
  if (!value) return value;
  const year = value.getUTCFullYear();
  if (Number.isNaN(year) || year < LIMITS.earliestYear || year > LIMITS.latestYear) {
    throw new InvalidInput(field, `${field} must be a date between ${LIMITS.earliestYear} and ${LIMITS.latestYear}.`);
  }
  return value;
}

export function campaignWindow(opensAt: Date | null | undefined, closesAt: Date | null | undefined): void {
  date('opensAt', opensAt);
  date('closesAt', closesAt);
  if (opensAt && closesAt && !(opensAt.getTime() < closesAt.getTime())) {
    throw new InvalidInput('closesAt', 'closesAt must be after opensAt.');
  }
}

/**
 * A webhook endpoint's URL, kept as given once it passes the URL policy (webhooks/urlPolicy.ts).
 * Spaces, control and format characters are refused first: the URL parser would drop or encode
 * them, and the stored text would then not be the URL Tessera calls.
 */
export function webhookUrl(value: string, policy: UrlPolicy): string {
  if (/\s/.test(value) || CONTROL_OR_FORMAT.test(value) || unstorable(value)) {
    throw new InvalidInput('url', `url must not contain spaces, ${CONTROL_OR_FORMAT_TEXT}, nor unpaired surrogates.`);
  }
  const check = checkEndpointUrl(value, policy);
  if (!check.ok) throw new InvalidInput('url', `url is not accepted: ${check.reason}.`);
  return value;
}

/** The order events are stored and shown in: the WebhookEvent enum's (schema.graphql). */
const WEBHOOK_EVENT_ORDER: Record<WebhookEvent, number> = {
  ALLOCATION_CREATED: 0,
  ALLOCATION_RELEASED: 1,
  HOLD_CREATED: 2,
  HOLD_CONFIRMED: 3,
  HOLD_EXPIRED: 4,
  CAMPAIGN_OPENED: 5,
  CAMPAIGN_CLOSED: 6,
  CAMPAIGN_SOLD_OUT: 7,
  CAMPAIGN_LOW_STOCK: 8,
  ALLOTMENT_LAPSED: 9,
  WAITLIST_OFFERED: 10,
  BALLOT_DRAWN: 11,
};

/**
 * An endpoint's events: at least one. A subscription is a set, so a repeat is not an error (it can
 * mean nothing else) but is stored once, and the set in the enum's order: the same choice always
 * reads back the same.
 */
export function webhookEvents(values: readonly WebhookEvent[]): WebhookEvent[] {
  if (values.length === 0) throw new InvalidInput('events', 'events must name at least one WebhookEvent.');
  return [...new Set(values)].sort((a, b) => WEBHOOK_EVENT_ORDER[a] - WEBHOOK_EVENT_ORDER[b]);
}
