// A minimal OTLP/HTTP traces receiver for `npm run bench` (issue 32): it answers every POST to
// /v1/traces with 200 and counts the requests, the bytes and the spans they carried — so the
// traced server's cost is measured with its spans really serialized and sent, and the bench can say
// how many arrived. Spans are counted by walking the protobuf wire format of
// ExportTraceServiceRequest (resource_spans = 1 → scope_spans = 2 → spans = 2), nothing decoded.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpReceiver {
  readonly url: string;
  readonly received: { requests: number; bytes: number; spans: number };
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received = { requests: 0, bytes: 0, spans: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.requests += 1;
      received.bytes += body.length;
      try {
        received.spans += spansIn(body);
      } catch {
        // a body the walker does not understand counts as a request, with no spans
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The spans in an ExportTraceServiceRequest, counted from its wire format. */
function spansIn(body: Buffer): number {
  let spans = 0;
  for (const resourceSpans of fields(body, 0, body.length, 1)) {
    for (const scopeSpans of fields(body, resourceSpans.start, resourceSpans.end, 2)) {
      for (const _span of fields(body, scopeSpans.start, scopeSpans.end, 2)) spans += 1;
    }
  }
  return spans;
}

/** The length-delimited fields numbered `wanted` between `start` and `end`. */
function* fields(buf: Buffer, start: number, end: number, wanted: number): Generator<{ start: number; end: number }> {
  let at = start;
  const varint = (): number => {
    let value = 0;
    let shift = 0;
    for (;;) {
      const byte = buf[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
      shift += 7;
    }
  };
  while (at < end) {
    const key = varint();
    const field = Math.floor(key / 8);
    switch (key & 7) {
      case 0:
        varint();
        break;
      case 1:
        at += 8;
        break;
      case 5:
        at += 4;
        break;
      case 2: {
        const length = varint();
        if (field === wanted) yield { start: at, end: at + length };
        at += length;
        break;
      }
      default:
        throw new Error('unsupported wire type');
    }
  }
}
