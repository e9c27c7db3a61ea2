// What an idempotency key stands for: the request's fingerprint, stored with the allocation in the
// same statement. The same key with another fingerprint is IDEMPOTENCY_KEY_REUSED.
import { createHash } from 'node:crypto';
import type { JsonValue } from '../db/json';

/** The request an idempotency key stands for: same key with another fingerprint is a reuse. */
export function fingerprint(operation: string, request: Record<string, JsonValue>): string {
  return createHash('sha256').update(canonicalJson({ operation, ...request })).digest('hex');
}

/** JSON with object keys sorted, so that {a,b} and {b,a} are the same request. */
function canonicalJson(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k]!)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
