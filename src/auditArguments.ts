// An audited call's arguments as stored: bounded, whatever the caller sent. Long strings keep their
// start and their length, long lists their length, deep objects stop at a depth; the whole is capped.
// Secrets never pass here (no admin mutation takes one), and bulk data (loadTickets' codes) becomes
// a count.
import type { JsonValue } from './db/json';

const MAX_STRING = 200;
const MAX_LIST = 20;
const MAX_DEPTH = 6;
const MAX_BYTES = 4096;

function summarize(value: unknown, depth: number): JsonValue {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return value.length > MAX_STRING ? { start: value.slice(0, 64), length: value.length } : value;
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return value.toString();
  if (depth >= MAX_DEPTH) return { truncated: true };
  if (Array.isArray(value)) return value.length > MAX_LIST ? { count: value.length } : value.map((v) => summarize(v, depth + 1));
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length > MAX_LIST) return { keys: entries.length };
    return Object.fromEntries(entries.map(([k, v]) => [k.slice(0, MAX_STRING), summarize(v, depth + 1)]));
  }
  return String(value).slice(0, MAX_STRING);
}

/** The arguments to store with an audit row: at most MAX_BYTES of JSON. */
export function summarizeArguments(args: Record<string, unknown>): { [key: string]: JsonValue } {
  const summary = summarize(args, 0) as { [key: string]: JsonValue };
  const bytes = Buffer.byteLength(JSON.stringify(summary));
  return bytes <= MAX_BYTES ? summary : { truncated: true, bytes };
}
