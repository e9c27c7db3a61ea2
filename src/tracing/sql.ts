// A span for each SQL statement a pooled connection sends inside a traced operation (db/client.ts
// wraps every connection's query with tracedQuery when tracing is on). The span is named by the
// src/db/ function that sent it (`named`, in the function itself: claimOne, claimGroup,
// claimTicket…) or, for BEGIN, COMMIT and ROLLBACK, by the command; a statement no function named
// (a Prisma model query) is named by its command (SELECT, INSERT…). Never the text, never a value.
// Attributes: the command, the rows it returned or changed, and the SQLSTATE when it failed.
//
// Statements outside any span (the webhook dispatcher's and the sweeper's polls) make none: a
// trace a second of background polling would bury the ones that matter.
import { SpanKind, trace } from '@opentelemetry/api';
import { activeTracer, ATTR, failed, statementName, type Span } from './index';

const TRANSACTION_COMMANDS = new Set(['BEGIN', 'COMMIT', 'ROLLBACK', 'START', 'SAVEPOINT', 'RELEASE']);

/** The statement's first word, upper-cased: its command (`db.operation.name`). */
function commandOf(text: string): string {
  const match = /^\s*([A-Za-z]+)/.exec(text);
  return match ? match[1]!.toUpperCase() : 'SQL';
}

type Query = (...args: unknown[]) => unknown;

/** Calls `query` (a pg client's) with `args`, inside a CLIENT span when a traced operation is active. */
export function tracedQuery(query: Query, args: unknown[]): unknown {
  const tracer = activeTracer();
  const parent = trace.getActiveSpan();
  if (tracer === null || parent === undefined || !parent.isRecording()) return query(...args);
  const first = args[0] as string | { text?: string } | undefined;
  const text = typeof first === 'string' ? first : (first?.text ?? '');
  const command = commandOf(text);
  const transactional = TRANSACTION_COMMANDS.has(command);
  const name = transactional ? command : (statementName() ?? command);
  const span = tracer.startSpan(name, {
    kind: SpanKind.CLIENT,
    attributes: { 'db.system.name': 'postgresql', 'db.operation.name': command, ...(name !== command ? { [ATTR.statement]: name } : {}) },
  });
  const last = args[args.length - 1];
  if (typeof last === 'function') {
    args[args.length - 1] = (error: unknown, result: unknown) => {
      finish(span, error, result);
      (last as (e: unknown, r: unknown) => void)(error, result);
    };
    return query(...args);
  }
  let returned: unknown;
  try {
    returned = query(...args);
  } catch (error) {
    finish(span, error, undefined);
    throw error;
  }
  if (returned && typeof (returned as PromiseLike<unknown>).then === 'function') {
    (returned as Promise<unknown>).then(
      (result) => finish(span, undefined, result),
      (error: unknown) => finish(span, error, undefined),
    );
  } else if (returned && typeof (returned as NodeJS.EventEmitter).once === 'function') {
    // A submittable (COPY streams): ended when it ends or fails.
    const emitter = returned as NodeJS.EventEmitter;
    let done = false;
    const end = (error?: unknown) => {
      if (done) return;
      done = true;
      finish(span, error, undefined);
    };
    emitter.once('finish', () => end()).once('end', () => end()).once('error', (error: unknown) => end(error)).once('close', () => end());
  } else finish(span, undefined, undefined);
  return returned;
}

function finish(span: Span, error: unknown, result: unknown): void {
  if (error) failed(span, error);
  else {
    const rows = (result as { rowCount?: number | null; rows?: unknown[] } | undefined);
    const count = rows?.rowCount ?? rows?.rows?.length;
    if (typeof count === 'number') span.setAttribute('db.response.returned_rows', count);
  }
  span.end();
}
