// load sends the codes sorted, a window at a time: rows that arrive in the code index's order are
// appended to it rather than scattered over it (a million codes load ~25% faster sorted), and a
// window bounds the memory a file of any size takes (~100 MB for a million codes).
import type { Codes } from './codes';

/** A window of the file's codes: in file order, and `batches(n)`, the same codes sorted, n at a time. */
export interface Window extends Codes {
  /** The last window of the file. */
  last: boolean;
  batches(n: number): Generator<string[]>;
}

/**
 * Windows of up to `size` codes. The sort is JavaScript's order of strings (UTF-16 code units):
 * under PostgreSQL's C collation the code index's own order; under another the order only costs
 * speed.
 */
export async function* sortedWindows(chunks: AsyncIterable<Codes>, size: number): AsyncGenerator<Window> {
  let codes: string[] = [];
  let lines: number[] = [];
  const window = (last: boolean): Window => {
    const codesOfWindow = codes;
    return { codes, lines, last, batches: (n) => sortedBatches(codesOfWindow, n) };
  };
  for await (const chunk of chunks) {
    for (let i = 0; i < chunk.codes.length; ) {
      // A full window goes once a code after it is known: a file of exactly `size` codes is one
      // last window, read once (a file of more is counted first, read twice).
      if (codes.length === size) {
        yield window(false);
        codes = [];
        lines = [];
      }
      const take = Math.min(size - codes.length, chunk.codes.length - i);
      codes.push(...chunk.codes.slice(i, i + take));
      lines.push(...chunk.lines.slice(i, i + take));
      i += take;
    }
  }
  yield window(true);
}

/**
 * `codes` sorted, `n` at a time. Sorting a million codes takes ~0.5 s, and the server would wait
 * for it; so the codes are first put in buckets by the two characters after the prefix they all
 * share (a bucket's codes all sort before the next bucket's), and each bucket is sorted only when
 * its codes are next to go: the first request leaves after one bucket's sort, and the rest are
 * sorted while requests are in flight.
 */
export function* sortedBatches(codes: string[], n: number): Generator<string[]> {
  if (codes.length === 0) return;
  let min = codes[0];
  let max = codes[0];
  for (const code of codes) {
    if (code < min) min = code;
    else if (code > max) max = code;
  }
  let shared = 0;
  while (shared < min.length && min.charCodeAt(shared) === max.charCodeAt(shared)) shared += 1;
  // Past its end a code's character counts as 0, below every real one (0xFFFF + 1 at most).
  const charAt = (code: string, i: number) => (i < code.length ? code.charCodeAt(i) + 1 : 0);
  const buckets = new Map<number, string[]>();
  for (const code of codes) {
    const key = charAt(code, shared) * 0x10001 + charAt(code, shared + 1);
    const bucket = buckets.get(key);
    if (bucket) bucket.push(code);
    else buckets.set(key, [code]);
  }
  let pending: string[] = [];
  for (const key of [...buckets.keys()].sort((a, b) => a - b)) {
    pending = pending.concat(buckets.get(key)!.sort());
    buckets.delete(key);
    for (; pending.length >= n; pending = pending.slice(n)) yield pending.slice(0, n);
  }
  if (pending.length) yield pending;
}
