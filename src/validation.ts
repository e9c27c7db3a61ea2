// Input validation, in one place, with messages that say what is allowed. Every limit here is part
// of the API (docs in schema.graphql); the database repeats the important ones as CHECKs.
import { InvalidInput } from './errors';
import type { JsonValue } from './db/json';

export const LIMITS = {
  nameLength: 200,
  holderLength: 256,
  metadataBytes: 16 * 1024,
  idempotencyKeyLength: 255,
  codeLength: 128,
  codesPerLoad: 10_000,
  generateCount: 1_000_000,
  prefixLength: 64,
  pageSize: 100,
  defaultPageSize: 20,
  perHolderLimit: 1_000_000,
} as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Printable ASCII, no spaces at either end: safe to log, to compare and to put in a header. */
const PRINTABLE_KEY = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;
// Control characters (C0, DEL, C1) have no place in names, holders or codes.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export const isUuid = (id: string): boolean => UUID.test(id);

export function text(field: string, value: string, max: number): string {
  if (value.length === 0 || value.trim().length === 0) throw new InvalidInput(field, `${field} must not be empty.`);
  if ([...value].length > max) throw new InvalidInput(field, `${field} must be at most ${max} characters.`);
  if (CONTROL.test(value)) throw new InvalidInput(field, `${field} must not contain control characters.`);
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

export function metadata(value: JsonValue | null | undefined): JsonValue | null {
  if (value === null || value === undefined) return null;
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > LIMITS.metadataBytes) {
    throw new InvalidInput('metadata', `metadata must be at most ${LIMITS.metadataBytes} bytes of JSON (got ${bytes}).`);
  }
  // PostgreSQL's jsonb cannot store the NUL character.
  if (JSON.stringify(value).includes('\\u0000')) throw new InvalidInput('metadata', 'metadata must not contain NUL characters.');
  return value;
}

export function intInRange(field: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidInput(field, `${field} must be an integer from ${min} to ${max}.`);
  }
  return value;
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
    if (code.length === 0 || code.length > LIMITS.codeLength || CONTROL.test(code) || code.trim() !== code) {
      throw new InvalidInput(
        'codes',
        `codes[${index}] must be 1 to ${LIMITS.codeLength} characters, without control characters or spaces at either end.`,
      );
    }
  });
  return [...values];
}

export function prefix(value: string | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (value.length > LIMITS.prefixLength || CONTROL.test(value) || value.trim() !== value) {
    throw new InvalidInput('prefix', `prefix must be at most ${LIMITS.prefixLength} characters, without control characters or spaces.`);
  }
  return value;
}

export function campaignWindow(opensAt: Date | null | undefined, closesAt: Date | null | undefined): void {
  if (opensAt && closesAt && !(opensAt.getTime() < closesAt.getTime())) {
    throw new InvalidInput('closesAt', 'closesAt must be after opensAt.');
  }
}
