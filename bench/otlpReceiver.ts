// A minimal OTLP/HTTP traces receiver for `npm run bench` and bench/tracingAb.ts: it answers every
// POST to /v1/traces with 200 and counts the requests, the bytes and the spans they carried — so the
// traced server's cost is measured with its spans really serialized and sent, and the bench can say
// how many arrived. Spans are counted by walking the protobuf wire format of
// ExportTraceServiceRequest (resource_spans = 1 → scope_spans = 2 → spans = 2), nothing decoded:
// the receiver's CPU is measured beside the server's, and a count needs no more (the OpenTelemetry
// library serializes requests but publishes no decoder; test/otlpExport.test.ts decodes them).
//
// It runs in a process of its own, as a collector would: in the bench's process it shared one
// event loop with the load generator, which then offered the traced server less while 100 MB of
// spans came in (the full bench measured tracing at 0.78-0.83x where bench/tracingAb.ts, a small
// process, measured 0.89-0.96x).
import { fork } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  requests: number;
  bytes: number;
  spans: number;
}

export interface OtlpReceiver {
  readonly url: string;
  /** Its process (the bench reads its CPU time). */
  readonly pid: number;
  /** What has arrived so far. */
  counts(): Promise<Received>;
  close(): Promise<void>;
}

/** Starts the receiver in a child process (this file, run by node). */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const child = fork(__filename, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = once(child, 'exit');
  const url = await Promise.race([
    once(child, 'message').then(([message]) => (message as { url: string }).url),
    exited.then(([code]) => Promise.reject(new Error(`the OTLP receiver exited (${String(code)}) before it listened`))),
  ]);
  return {
    url,
    pid: child.pid!,
    async counts() {
      const answer = once(child, 'message');
      child.send('counts');
      return (await answer)[0] as Received;
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill();
      await exited;
    },
  };
}

/** The receiver itself, in the child: listens, says where, and answers 'counts' with what came. */
function serve(): void {
  const received: Received = { requests: 0, bytes: 0, spans: 0 };
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
  server.listen(0, '127.0.0.1', () => process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
  process.on('message', (message) => {
    if (message === 'counts') process.send!({ ...received });
  });
  process.on('disconnect', () => process.exit(0));
}

if (require.main === module) serve();

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
