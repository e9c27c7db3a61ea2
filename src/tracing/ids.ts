// Trace and span ids for the SDK (its IdGenerator), cut from a pool of random bytes hex-encoded in
// one go: the SDK's own generator fills and hex-encodes a buffer for every id, and two ids for each
// span of every claim were 0.7% of the traced server's busy time in a CPU profile
// (bench/tracingAb.ts --profile). The pool comes from crypto's generator, as W3C Trace Context
// recommends for ids that may leave the process; an all-zero id, which the specification calls
// invalid, is drawn again.
import { randomBytes } from 'node:crypto';
import type { IdGenerator } from '@opentelemetry/sdk-trace';

/** Bytes drawn at a time: ids for some 680 spans. */
const POOL_BYTES = 16 * 1024;
const INVALID_TRACE_ID = '0'.repeat(32);
const INVALID_SPAN_ID = '0'.repeat(16);

export class PooledIdGenerator implements IdGenerator {
  private pool = '';
  private at = 0;

  generateTraceId(): string {
    const id = this.take(32);
    return id === INVALID_TRACE_ID ? this.generateTraceId() : id;
  }

  generateSpanId(): string {
    const id = this.take(16);
    return id === INVALID_SPAN_ID ? this.generateSpanId() : id;
  }

  private take(chars: number): string {
    if (this.at + chars > this.pool.length) {
      this.pool = randomBytes(POOL_BYTES).toString('hex');
      this.at = 0;
    }
    const id = this.pool.slice(this.at, this.at + chars);
    this.at += chars;
    return id;
  }
}

/** A hex digit's value (ids are lower-case hex; upper case is read too). */
const nibble = (c: number): number => (c <= 57 ? c - 48 : c >= 97 ? c - 87 : c - 55);

/** Writes the bytes of a hex id into `to` from `at` (the form the delivery-link table keeps), without a Buffer per id. */
export function writeIdBytes(hex: string, to: Uint8Array, at: number): void {
  for (let i = 0; i < hex.length; i += 2) to[at + (i >> 1)] = (nibble(hex.charCodeAt(i)) << 4) | nibble(hex.charCodeAt(i + 1));
}
