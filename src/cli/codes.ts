// The codes of a code file: the first field of each CSV record (RFC 4180, read by csv-parse:
// quoted commas, line breaks and doubled quotes, a byte-order mark, \n, \r\n or \r line ends). A
// first code that reads "code" (or codes, ticket, tickets, ticket_code) is a header; records whose
// first field is empty are skipped. Read as a stream: a file of millions of codes is never held
// whole here.
import { parse } from 'csv-parse';
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';

/** Codes in file order, each with the line its record starts on (1-based). */
export interface Codes {
  codes: string[];
  lines: number[];
}

const HEADER_CELL = /^(code|codes|ticket|tickets|ticket_code)$/i;
/** Codes handed on at a time: few enough awaits per million codes, few enough to stay small. */
const CHUNK = 10_000;
const LINE_BREAK = /\r\n|\r|\n/g;

/** The code file, or standard input for "-". */
export function openInput(file: string): Readable {
  return file === '-' ? process.stdin : createReadStream(file);
}

/** The name of the input in messages. */
export const inputName = (file: string): string => (file === '-' ? 'standard input' : file);

/**
 * The codes of a CSV stream in file order, a chunk at a time. Empty lines are records too (with an
 * empty field), so that counting records and the line breaks inside their quoted fields gives each
 * record's line, as the messages name it.
 */
export async function* readCodes(input: Readable): AsyncGenerator<Codes> {
  const parser = input.pipe(parse({ bom: true, relax_column_count: true, relax_quotes: true, trim: true, skip_empty_lines: false }));
  input.once('error', (error) => parser.destroy(error));
  let line = 0;
  let seenFirst = false;
  let out: Codes = { codes: [], lines: [] };
  for await (const record of parser as AsyncIterable<string[]>) {
    const start = line + 1;
    line = start + lineBreaks(record);
    const code = record[0];
    if (!code) continue;
    if (!seenFirst) {
      seenFirst = true;
      if (HEADER_CELL.test(code)) continue;
    }
    out.codes.push(code);
    out.lines.push(start);
    if (out.codes.length >= CHUNK) {
      yield out;
      out = { codes: [], lines: [] };
    }
  }
  if (out.codes.length) yield out;
}

/** The line breaks inside a record's quoted fields. */
function lineBreaks(record: string[]): number {
  let n = 0;
  for (const field of record) if (field.includes('\n') || field.includes('\r')) n += field.match(LINE_BREAK)!.length;
  return n;
}

/** How many codes `file` holds (read once, whole). */
export async function countCodes(file: string): Promise<number> {
  const input = openInput(file);
  let total = 0;
  try {
    for await (const { codes } of readCodes(input)) total += codes.length;
  } finally {
    input.destroy();
  }
  return total;
}
