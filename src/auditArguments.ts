// An audited call's arguments as stored: bounded, whatever the caller sent. Long strings keep their
// start and their length, long lists their length, deep objects stop at a depth; the whole is capped.
// Secrets never pass here (no audited mutation takes one: API keys and webhook secrets are made by
// the server and only returned), and bulk data (loadTickets' codes) becomes a count.
import type { JsonValue } from './db/json';
import { unstorable } from './validation';

const MAX_STRING = 200;
const MAX_LIST = 20;
const MAX_DEPTH = 6;
const MAX_BYTES = 4096;

/**
 * A string as it can be stored: jsonb refuses NUL and unpaired surrogates (a row refused would lose
 * the whole entry), so such a string is stored as what is wrong with it; a long one keeps its first
 * characters — whole code points, never half an emoji — and its length.
 */
function text(value: string): JsonValue {
  const wrong = unstorable(value);
  if (wrong) return { unstorable: wrong, length: value.length };
  if (value.length <= MAX_STRING) return value;
  return { start: Array.from(value).slice(0, 64).join(''), length: value.length };
}

function summarize(value: unknown, depth: number): JsonValue {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return text(value);
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return value.toString();
  if (depth >= MAX_DEPTH) return { truncated: true };
  if (Array.isArray(value)) return value.length > MAX_LIST ? { count: value.length } : value.map((v) => summarize(v, depth + 1));
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length > MAX_LIST) return { keys: entries.length };
    return Object.fromEntries(entries.map(([k, v]) => [unstorable(k) ? `(${unstorable(k)} in a key)` : Array.from(k).slice(0, MAX_STRING).join(''), summarize(v, depth + 1)]));
  }
  return text(String(value));
}

/** The arguments to store with an audit row: at most MAX_BYTES of JSON. */
export function summarizeArguments(args: Record<string, unknown>): { [key: string]: JsonValue } {
  const summary = summarize(args, 0) as { [key: string]: JsonValue };
  const bytes = Buffer.byteLength(JSON.stringify(summary));
  return bytes <= MAX_BYTES ? summary : { truncated: true, bytes };
}
