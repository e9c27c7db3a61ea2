// OTLP/HTTP protobuf as Tessera sends it: spans encoded here, one by one as they end
// (EncodedSpans, for otlpBatches.ts), rather than by the library's serializer, and the
// OpenTelemetry library's HTTP transport (OTEL_EXPORTER_OTLP_* endpoint, headers, timeout,
// compression, certificates; its retries and concurrency limit) carrying the request. Why: at
// ratio 1.0 every claim's span is encoded, and the library's serializer took 6-12 µs a span on
// this machine (two passes — a size estimate, then the writes — with a byte array per trace and
// span id); this encoder writes in one pass into one Buffer, short ASCII strings and ids byte by
// byte, attribute keys from a cache: 2.7-4 µs a span in the same loops, 5-6 µs a claim in CPU
// profiles of the running server (docs/BENCHMARKS.md, "Tracing"). Sending the
// library's serializer's work to a worker thread was tried and lost: copying the spans there cost
// 4 µs a span, and on two cores the thread's CPU is the claims' too.
//
// The output is byte for byte the library's (test/otlpProtobuf.test.ts encodes the same spans with
// both): the same fields in the same order, so a collector sees exactly what it would have seen.
import type { Attributes, AttributeValue, HrTime, SpanContext } from '@opentelemetry/api';
import type { ExportResult, InstrumentationScope } from '@opentelemetry/core';
import { createOtlpHttpExportDelegate, convertLegacyHttpOptions } from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace';
import { writeIdBytes } from './ids';

/** Wire types of a protobuf tag. */
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;
/** Span flags of OTLP 1.x: the low byte is the W3C trace flags; these say whether the parent was remote. */
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;

const tag = (field: number, wireType: number): number => (field << 3) | wireType;
const varintSize = (value: number): number => (value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5);

/** A protobuf writer into one growing Buffer. Nested messages reserve one byte for their length and move their body when it needs more. */
class Writer {
  buf: Buffer;
  pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  ensure(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** A tag or a varint below 2^32 (the caller has ensured room for 5 bytes). */
  uint(value: number): void {
    let v = value >>> 0;
    while (v > 0x7f) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
  }

  /** An int64 varint (negative numbers in ten bytes of two's complement, as protobuf has them). */
  int64(value: number): void {
    this.ensure(10);
    if (value >= 0 && value <= 0xffffffff) {
      this.uint(value);
      return;
    }
    const magnitude = Math.abs(value);
    let low = magnitude >>> 0;
    let high = (magnitude / 0x100000000) >>> 0;
    if (value < 0) {
      low = ~low >>> 0;
      high = ~high >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    while (high > 0 || low > 0x7f) {
      this.buf[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    this.buf[this.pos++] = low & 0x7f;
  }

  /** Starts a length-delimited body after `field`'s tag: returns where its length goes. */
  begin(field: number): number {
    this.ensure(6);
    this.uint(tag(field, LENGTH_DELIMITED));
    this.buf[this.pos] = 0;
    return this.pos++;
  }

  /** Ends the body begun at `at`: writes its length there, moving the body when the length takes more than one byte. */
  end(at: number): void {
    const length = this.pos - at - 1;
    if (length < 0x80) {
      this.buf[at] = length;
      return;
    }
    const extra = varintSize(length) - 1;
    this.ensure(extra);
    this.buf.copyWithin(at + 1 + extra, at + 1, this.pos);
    this.pos += extra;
    const end = this.pos;
    this.pos = at;
    this.uint(length);
    this.pos = end;
  }

  string(field: number, value: string): void {
    const length = value.length;
    this.ensure(length * 3 + 10);
    const at = this.begin(field);
    // Short ASCII strings (ids, names, codes) byte by byte: cheaper than a call into Buffer's UTF-8 writer.
    if (length <= 64) {
      const buf = this.buf;
      let pos = this.pos;
      let i = 0;
      for (; i < length; i++) {
        const c = value.charCodeAt(i);
        if (c >= 0x80) break;
        buf[pos++] = c;
      }
      if (i === length) {
        this.pos = pos;
        this.end(at);
        return;
      }
    }
    this.pos = at + 1 + this.buf.write(value, at + 1, 'utf8');
    this.end(at);
  }

  /** A trace or span id, given in hex. */
  id(field: number, hex: string): void {
    const length = hex.length >> 1;
    this.ensure(length + 2);
    const buf = this.buf;
    let pos = this.pos;
    buf[pos++] = tag(field, LENGTH_DELIMITED);
    buf[pos++] = length;
    writeIdBytes(hex, buf, pos);
    this.pos = pos + length;
  }

  fixed32(field: number, value: number): void {
    this.ensure(9);
    this.uint(tag(field, FIXED32));
    this.buf.writeUInt32LE(value >>> 0, this.pos);
    this.pos += 4;
  }

  /** An HrTime as fixed64 nanoseconds, computed in parts small enough to stay exact in a double. */
  time(field: number, [seconds, nanos]: HrTime): void {
    this.ensure(13);
    this.uint(tag(field, FIXED64));
    const lowSecondsNanos = (seconds & 0xffff) * 1e9;
    const highSecondsNanos = ((seconds / 0x10000) >>> 0) * 1e9;
    const low = (lowSecondsNanos >>> 0) + (((highSecondsNanos & 0xffff) * 0x10000) >>> 0) + nanos;
    const high = Math.floor(lowSecondsNanos / 0x100000000) + ((highSecondsNanos / 0x10000) >>> 0) + Math.floor(low / 0x100000000);
    this.buf.writeUInt32LE(low >>> 0, this.pos);
    this.buf.writeUInt32LE(high >>> 0, this.pos + 4);
    this.pos += 8;
  }

  bytes(from: Uint8Array): void {
    const length = from.length;
    this.ensure(length);
    if (length > 64) {
      this.buf.set(from, this.pos);
      this.pos += length;
      return;
    }
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < length; i++) buf[pos++] = from[i]!;
    this.pos = pos;
  }
}

/** KeyValue.key with its tag and length, encoded once per attribute name (Tessera uses a few dozen). */
const KEYS = new Map<string, Buffer>();
const MAX_CACHED_KEYS = 1024;

function keyBytes(key: string): Buffer {
  let bytes = KEYS.get(key);
  if (bytes === undefined) {
    const w = new Writer(key.length * 3 + 8);
    w.string(1, key);
    bytes = Buffer.from(w.buf.subarray(0, w.pos));
    if (KEYS.size < MAX_CACHED_KEYS) KEYS.set(key, bytes);
  }
  return bytes;
}

function anyValue(w: Writer, value: unknown): void {
  switch (typeof value) {
    case 'string':
      w.string(1, value);
      return;
    case 'boolean':
      w.ensure(2);
      w.uint(tag(2, VARINT));
      w.buf[w.pos++] = value ? 1 : 0;
      return;
    case 'number':
      if (Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63) {
        w.ensure(1);
        w.uint(tag(3, VARINT));
        w.int64(value);
      } else {
        w.ensure(9);
        w.uint(tag(4, FIXED64));
        w.buf.writeDoubleLE(value, w.pos);
        w.pos += 8;
      }
      return;
  }
  if (value instanceof Uint8Array) {
    w.ensure(value.length + 6);
    const at = w.begin(7);
    w.bytes(value);
    w.end(at);
  } else if (Array.isArray(value)) {
    const array = w.begin(5);
    for (const item of value) {
      const at = w.begin(1);
      anyValue(w, item);
      w.end(at);
    }
    w.end(array);
  } else if (typeof value === 'object' && value !== null) {
    const list = w.begin(6);
    for (const key in value) {
      if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
      const pair = w.begin(1);
      w.string(1, key);
      const at = w.begin(2);
      anyValue(w, (value as Record<string, unknown>)[key]);
      w.end(at);
      w.end(pair);
    }
    w.end(list);
  }
}

function attributes(w: Writer, field: number, attrs: Attributes): void {
  // Own keys in insertion order: what the library's for…in with hasOwnProperty visits.
  const keys = Object.keys(attrs);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const pair = w.begin(field);
    w.bytes(keyBytes(key));
    const value = w.begin(2);
    anyValue(w, attrs[key] as AttributeValue | undefined);
    w.end(value);
    w.end(pair);
  }
}

const flags = (traceFlags: number, isRemote: boolean | undefined): number => (traceFlags & 0xff) | HAS_IS_REMOTE | (isRemote ? IS_REMOTE : 0);

function dropped(w: Writer, field: number, count: number | undefined): void {
  w.ensure(6);
  w.uint(tag(field, VARINT));
  w.uint(count ?? 0);
}

function event(w: Writer, e: TimedEvent): void {
  const at = w.begin(11);
  w.time(1, e.time);
  w.string(2, e.name);
  if (e.attributes) attributes(w, 3, e.attributes);
  dropped(w, 4, e.droppedAttributesCount);
  w.end(at);
}

function link(w: Writer, context: SpanContext, attrs: Attributes | undefined, droppedAttributes: number | undefined): void {
  const at = w.begin(13);
  w.id(1, context.traceId);
  w.id(2, context.spanId);
  const traceState = context.traceState?.serialize();
  if (traceState) w.string(3, traceState);
  if (attrs) attributes(w, 4, attrs);
  dropped(w, 5, droppedAttributes);
  w.fixed32(6, flags(context.traceFlags, context.isRemote));
  w.end(at);
}

/** One Span message (ScopeSpans.spans, field 2). */
function span(w: Writer, s: ReadableSpan): void {
  const at = w.begin(2);
  const context = s.spanContext();
  w.id(1, context.traceId);
  w.id(2, context.spanId);
  const traceState = context.traceState?.serialize();
  if (traceState) w.string(3, traceState);
  const parent = s.parentSpanContext;
  if (parent?.spanId) w.id(4, parent.spanId);
  w.string(5, s.name);
  if (s.kind != null) {
    w.ensure(3);
    w.uint(tag(6, VARINT));
    w.uint(s.kind + 1);
  }
  w.time(7, s.startTime);
  w.time(8, s.endTime);
  attributes(w, 9, s.attributes);
  dropped(w, 10, s.droppedAttributesCount);
  for (const e of s.events) event(w, e);
  dropped(w, 12, s.droppedEventsCount);
  for (const l of s.links) link(w, l.context, l.attributes, l.droppedAttributesCount);
  dropped(w, 14, s.droppedLinksCount);
  const status = w.begin(15);
  if (s.status.message) w.string(2, s.status.message);
  w.ensure(6);
  w.uint(tag(3, VARINT));
  w.uint(s.status.code);
  w.end(status);
  w.fixed32(16, flags(context.traceFlags, parent?.isRemote));
  w.end(at);
}

/** ScopeSpans.scope (field 1). */
function scopeOf(w: Writer, scope: InstrumentationScope): void {
  const s = w.begin(1);
  w.string(1, scope.name);
  if (scope.version) w.string(2, scope.version);
  const scoped = scope as InstrumentationScope & { attributes?: Attributes; droppedAttributesCount?: number };
  if (scoped.attributes) attributes(w, 3, scoped.attributes);
  if (scoped.droppedAttributesCount) dropped(w, 4, scoped.droppedAttributesCount);
  w.end(s);
}

/** ResourceSpans.resource (field 1). */
function resourceOf(w: Writer, resource: Resource): void {
  const r = w.begin(1);
  if (resource.attributes) attributes(w, 1, resource.attributes);
  dropped(w, 2, 0);
  w.end(r);
}

/**
 * Spans of one resource and one scope, encoded one by one as they end (otlpBatches.ts), and the
 * ExportTraceServiceRequest that carries them: the bytes the library's serializer makes of them.
 */
export class EncodedSpans {
  private readonly w: Writer;
  count = 0;

  constructor(
    readonly resource: Resource,
    readonly scope: InstrumentationScope,
    expected: number,
  ) {
    // ~700 bytes a claim's span; a batch larger than 1,024 spans grows as it fills rather than up front.
    this.w = new Writer(Math.min(Math.max(1, expected), 1024) * 700 + 256);
  }

  add(s: ReadableSpan): void {
    span(this.w, s);
    this.count += 1;
  }

  /** No more spans come: the bytes move to a buffer of their size (a queue of batches holds what they need, no more). */
  seal(): void {
    if (this.w.buf.length - this.w.pos > this.w.pos / 8) this.w.buf = Buffer.from(this.w.buf.subarray(0, this.w.pos));
  }

  request(): Uint8Array {
    const w = new Writer(this.w.pos + 1024);
    const at = w.begin(1);
    resourceOf(w, this.resource);
    const scoped = w.begin(2);
    scopeOf(w, this.scope);
    w.bytes(this.w.buf.subarray(0, this.w.pos));
    if (this.scope.schemaUrl) w.string(3, this.scope.schemaUrl);
    w.end(scoped);
    if (this.resource.schemaUrl) w.string(3, this.resource.schemaUrl);
    w.end(at);
    return w.buf.subarray(0, w.pos);
  }
}

/** A request as the transport carries it: its bytes, and how many spans (for the library's own metrics). */
interface EncodedRequest {
  bytes: Uint8Array;
  spans: number;
}

/** Sends encoded requests: OTLP over HTTP with protobuf, configured by the OTEL_EXPORTER_OTLP_* variables of the process. */
export class OtlpProtobufTransport {
  private readonly delegate = createOtlpHttpExportDelegate<EncodedRequest, unknown>(
    convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' }),
    { serializeRequest: (request) => request.bytes, deserializeResponse: (data) => ProtobufTraceSerializer.deserializeResponse(data) },
    'otlp_http_span_exporter',
    { name: 'span', countItems: (request) => request.spans },
    undefined,
  );

  send(bytes: Uint8Array, spans: number, resultCallback: (result: ExportResult) => void): void {
    this.delegate.export({ bytes, spans }, resultCallback);
  }

  shutdown(): Promise<void> {
    return this.delegate.shutdown();
  }
}
