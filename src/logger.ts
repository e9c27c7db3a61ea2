// Structured JSON logs (pino). Authorization headers and API keys are redacted wherever they appear.
//
// Logs never block the process, and never keep it from exiting. They are written to stdout through
// Node's own stream, never with a synchronous write of our own. pino's default destination
// (sonic-boom) writes with writeSync. When the reader of stdout goes away, its flushSync (run at
// exit) retries EPIPE forever, sleeping 100 ms at a time. Reproduced here: a server whose parent had
// exited never finished its SIGTERM, its main thread sleeping in Atomics.wait. When the reader is
// only slow, writeSync waits for it. Node's stream for a pipe or a socket is non-blocking and buffers
// what the reader has not taken yet. That buffer is bounded here: past LOG_BUFFER_BYTES a line is
// dropped and counted (tessera_log_lines_dropped_total{reason="full"}). Once stdout is closed
// (EPIPE), every later line is dropped and counted as reason="closed".
//
// Why drop rather than block: a log line is worth less than a claim. A reader that stops must not
// stall claims, and a reader that is gone must not hold up shutdown. The counter says how many lines
// were lost, and /metrics reports it.
import pino from 'pino';

export type Logger = pino.Logger;

/** The most bytes waiting for a slow reader of stdout before new lines are dropped. */
export const LOG_BUFFER_BYTES = 1 << 20;

/** Log lines dropped since the process started, by reason (read by metrics.ts). */
export const droppedLogLines = { full: 0, closed: 0 };

let stdoutClosed = false;
let guarded = false;

/**
 * Keeps an EPIPE (or any error) on stdout or stderr from crashing the process: a stream without an
 * 'error' listener throws its error. Once stdout has failed, log lines are counted as dropped.
 */
export function guardStandardStreams(): void {
  if (guarded) return;
  guarded = true;
  process.stdout.on('error', () => {
    stdoutClosed = true;
  });
  process.stderr.on('error', () => undefined);
}

/** pino's destination: Node's stdout, bounded, never blocking. */
const destination = {
  write(line: string): void {
    if (stdoutClosed || process.stdout.destroyed) {
      droppedLogLines.closed += 1;
      return;
    }
    if (process.stdout.writableLength > LOG_BUFFER_BYTES) {
      droppedLogLines.full += 1;
      return;
    }
    process.stdout.write(line);
  },
};

export function createLogger(options: { level?: string; env: string }): Logger {
  guardStandardStreams();
  return pino(
    {
      level: options.level ?? (options.env === 'test' ? 'silent' : 'info'),
      base: { service: 'tessera' },
      redact: {
        paths: ['authorization', 'apiKey', 'adminApiKey', '*.authorization', '*.apiKey', 'req.headers.authorization'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

/**
 * Waits, at most `ms`, for stdout to hand what it buffered to its reader: the last lines of a normal
 * shutdown reach the log. A reader that is gone or stuck costs that bound, never more.
 */
export async function drainStdout(ms = 1000): Promise<void> {
  if (stdoutClosed || process.stdout.writableLength === 0) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      process.stdout.off('drain', done).off('error', done).off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    // Drained, or the reader is gone (EPIPE): either way nothing more will be written.
    process.stdout.once('drain', done).once('error', done).once('close', done);
  });
}
