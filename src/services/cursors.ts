// Page cursors: opaque to clients (base64url of `<kind>:<value>`), checked strictly when they come
// back — a cursor this server did not issue is BAD_USER_INPUT naming `after`, never a database
// error. One place for every connection's cursor.
import { InvalidInput } from '../errors';
import { isUuid, LIMITS } from '../validation';

const MAX_CURSOR_LENGTH = 200;
const INT8_MAX = 9_223_372_036_854_775_807n;
/** A ballot rank is an integer column: a larger value would fail in PostgreSQL (22003), not here. */
const INT4_MAX = 2_147_483_647;
/** created_at as PostgreSQL prints timestamptz (microseconds kept: a JS Date would drop them). */
const PG_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?[+-](\d{2})(?::(\d{2}))?$/;

/**
 * A timestamp PostgreSQL printed, with every field in range, so that PostgreSQL takes it back: a real
 * calendar day (else 22008), an offset of at most ±15:59 (else 22009, e.g. `+15:99`), and a year of
 * the date arguments' range — no row was created outside it.
 */
function isPgTimestamp(text: string): boolean {
  const m = PG_TIMESTAMP.exec(text);
  if (!m) return false;
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [m[1], m[2], m[3], m[4], m[5], m[6], m[8], m[9] ?? '0'].map(Number) as number[];
  const date = new Date(Date.UTC(year!, month! - 1, day!));
  return (
    year! >= LIMITS.earliestYear &&
    year! <= LIMITS.latestYear &&
    date.getUTCMonth() === month! - 1 &&
    date.getUTCDate() === day! &&
    hour! < 24 &&
    minute! < 60 &&
    second! < 60 &&
    offsetHours! <= 15 &&
    offsetMinutes! < 60
  );
}

const notOurs = () => new InvalidInput('after', 'after is not a cursor returned by this connection.');

const encode = (kind: string, value: string) => Buffer.from(`${kind}:${value}`).toString('base64url');

function decode(kind: string, cursor: string): string {
  if (typeof cursor !== 'string' || cursor.length > MAX_CURSOR_LENGTH || !/^[\w-]*$/.test(cursor)) throw notOurs();
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!text.startsWith(`${kind}:`)) throw notOurs();
  return text.slice(kind.length + 1);
}

/** Allocations by sequence. */
export const sequenceCursor = {
  encode: (sequence: number) => encode('seq', String(sequence)),
  decode(cursor: string): number {
    const value = decode('seq', cursor);
    if (!/^\d{1,15}$/.test(value)) throw notOurs();
    return Number(value);
  },
};

/** Audit entries by id (a bigint). */
export const auditCursor = {
  encode: (id: string) => encode('audit', id),
  decode(cursor: string): bigint {
    const value = decode('audit', cursor);
    if (!/^\d{1,19}$/.test(value) || BigInt(value) > INT8_MAX) throw notOurs();
    return BigInt(value);
  },
};

/** Partners by id. */
export const partnerCursor = {
  encode: (id: string) => encode('partner', id),
  decode(cursor: string): string {
    const value = decode('partner', cursor);
    if (!isUuid(value)) throw notOurs();
    return value;
  },
};

/** Campaigns by (created_at, id), newest first. */
export const campaignCursor = {
  encode: (c: { createdAt: string; id: string }) => encode('campaign', `${c.createdAt}|${c.id}`),
  decode(cursor: string): { createdAt: string; id: string } {
    const [createdAt = '', id = '', ...rest] = decode('campaign', cursor).split('|');
    if (rest.length > 0 || !isPgTimestamp(createdAt) || !isUuid(id)) throw notOurs();
    return { createdAt, id };
  },
};

/** Webhook deliveries by (created_at, id), newest first. */
export const deliveryCursor = {
  encode: (d: { createdAt: string; id: string }) => encode('delivery', `${d.createdAt}|${d.id}`),
  decode(cursor: string): { createdAt: string; id: string } {
    const [createdAt = '', id = '', ...rest] = decode('delivery', cursor).split('|');
    if (rest.length > 0 || !isPgTimestamp(createdAt) || !isUuid(id)) throw notOurs();
    return { createdAt, id };
  },
};

/** Ballot entries: by entry order (seq) before the draw, by rank after it. */
export const ballotEntryCursor = {
  encode: (order: 'seq' | 'rank', value: number) => encode(`ballot-${order}`, String(value)),
  decode(order: 'seq' | 'rank', cursor: string): number {
    let value: string;
    try {
      value = decode(`ballot-${order}`, cursor);
    } catch (error) {
      const other = order === 'rank' ? 'seq' : 'rank';
      // A page cursor from before the draw, brought back after it: the order has changed.
      if (tryDecode(`ballot-${other}`, cursor)) throw new InvalidInput('after', 'The ballot was drawn since this cursor was issued: start again from the first page, in rank order.');
      throw error;
    }
    if (!/^\d{1,15}$/.test(value) || (order === 'rank' && Number(value) > INT4_MAX)) throw notOurs();
    return Number(value);
  },
};

function tryDecode(kind: string, cursor: string): boolean {
  try {
    decode(kind, cursor);
    return true;
  } catch {
    return false;
  }
}
