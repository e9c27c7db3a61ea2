// Structured JSON logs (pino). Authorization headers and API keys are redacted wherever they appear:
// a key `authorization`, `apiKey` or `adminApiKey` at the top of a line or one level down, and
// req.headers.authorization (redactSecrets).
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
//
// The lines of one turn of the event loop go to stdout in one write, at its end (setImmediate): one
// line per operation is one write system call per request otherwise, which under load costs more
// than the line itself. drainStdout, and the process's 'exit', write what is still waiting.
import pino from 'pino';

export type Logger = pino.Logger;

/** The most bytes waiting for a slow reader of stdout before new lines are dropped. */
export const LOG_BUFFER_BYTES = 1 << 20;

/** Log lines dropped since the process started, by reason (read by metrics.ts). */
export const droppedLogLines = { full: 0, closed: 0 };

/**
 * The guard's state, kept on stdout itself rather than in this module: the streams are the
 * process's, and a module evaluated again (Jest does, once per test file) must find the guard
 * already there instead of adding another pair of listeners (the 11th warned of a leak).
 */
const streams: { guarded: boolean; stdoutClosed: boolean } = ((process.stdout as unknown as Record<symbol, typeof streams | undefined>)[
  Symbol.for('tessera.standardStreams')
] ??= { guarded: false, stdoutClosed: false });

/**
 * Keeps an EPIPE (or any error) on stdout or stderr from crashing the process: a stream without an
 * 'error' listener throws its error. Once stdout has failed, log lines are counted as dropped.
 */
export function guardStandardStreams(): void {
  if (streams.guarded) return;
  streams.guarded = true;
  process.stdout.on('error', () => {
    streams.stdoutClosed = true;
  });
  process.stderr.on('error', () => undefined);
}

/** The lines written since the last write to stdout, and how many they are. */
let waiting = '';
let waitingLines = 0;
let writeScheduled = false;

/** Hands the waiting lines to stdout, in one write. */
function writeWaiting(): void {
  writeScheduled = false;
  if (waitingLines === 0) return;
  const text = waiting;
  const lines = waitingLines;
  waiting = '';
  waitingLines = 0;
  if (streams.stdoutClosed || process.stdout.destroyed) droppedLogLines.closed += lines;
  else process.stdout.write(text);
}

/** pino's destination: Node's stdout, bounded, never blocking, one write per turn of the event loop. */
const destination = {
  write(line: string): void {
    if (streams.stdoutClosed || process.stdout.destroyed) {
      droppedLogLines.closed += 1;
      return;
    }
    if (process.stdout.writableLength + waiting.length > LOG_BUFFER_BYTES) {
      droppedLogLines.full += 1;
      return;
    }
    waiting += line;
    waitingLines += 1;
    if (!writeScheduled) {
      writeScheduled = true;
      setImmediate(writeWaiting);
    }
  },
};

const SECRET_KEYS = new Set(['authorization', 'apiKey', 'adminApiKey']);
const CENSOR = '[redacted]';

/** A copy of `value` (its prototype and own properties, enumerable or not: an Error stays one) with its secret keys censored; `value` itself when it has none. */
function censored(value: object, alsoHeaders: boolean): object {
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const inner = (value as Record<string, unknown>)[key];
    let replacement: unknown;
    if (SECRET_KEYS.has(key)) replacement = CENSOR;
    else if (alsoHeaders && key === 'headers' && inner !== null && typeof inner === 'object') replacement = censored(inner, false);
    else continue;
    if (replacement === inner) continue;
    copy ??= Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value)) as Record<string, unknown>;
    Object.defineProperty(copy, key, { value: replacement, enumerable: true, configurable: true, writable: true });
  }
  return copy ?? value;
}

/**
 * What a line's object becomes before it is written (pino's `formatters.log`): `authorization`,
 * `apiKey` and `adminApiKey` censored at the top and one level down, and req.headers.authorization.
 * The paths pino's own `redact` would take as ['authorization', 'apiKey', 'adminApiKey',
 * '*.authorization', '*.apiKey', '*.adminApiKey', 'req.headers.authorization'] — whose wildcards cost
 * 8 µs on every line (pino 10), more than the rest of writing it; this costs a fraction of one.
 * Objects are copied where a secret is found, never changed.
 */
export function redactSecrets(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key in object) {
    if (!Object.prototype.hasOwnProperty.call(object, key)) continue;
    const value = object[key];
    let replacement: unknown;
    if (SECRET_KEYS.has(key)) replacement = CENSOR;
    else if (value !== null && typeof value === 'object' && !Array.isArray(value)) replacement = censored(value, key === 'req');
    else continue;
    if (replacement !== value) (copy ??= { ...object })[key] = replacement;
  }
  return copy ?? object;
}

let writesWaitingAtExit = false;

export function createLogger(options: { level?: string; env: string }): Logger {
  guardStandardStreams();
  if (!writesWaitingAtExit) {
    writesWaitingAtExit = true;
    process.on('exit', writeWaiting);
  }
  return pino(
    {
      level: options.level ?? (options.env === 'test' ? 'silent' : 'info'),
      base: { service: 'tessera' },
      formatters: { log: redactSecrets },
    },
    destination,
  );
}

/**
 * Waits, at most `ms`, for stdout to hand what it buffered to its reader: the last lines of a normal
 * shutdown reach the log. A reader that is gone or stuck costs that bound, never more.
 */
export async function drainStdout(ms = 1000): Promise<void> {
  writeWaiting();
  if (streams.stdoutClosed || process.stdout.writableLength === 0) return;
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
