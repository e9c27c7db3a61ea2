// The allocations export as CSV, shared by `tessera export` and the console's Export button: one
// query, one header, one escaping.

export const EXPORT_QUERY = `query($id: ID!, $after: String) {
  campaign(id: $id) {
    allocations(first: 100, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node { id sequence status holder idempotencyKey allocatedAt expiresAt releasedAt metadata ticket { code } partner { id name } } }
    }
  }
}`;

export const HEADER =
  'sequence,allocation_id,ticket_code,holder,partner_id,partner_name,status,allocated_at,expires_at,released_at,idempotency_key,metadata\n';

/** One allocation as EXPORT_QUERY returns it. */
export interface ExportedAllocation {
  id: string;
  sequence: number | string;
  status: string;
  holder: string | null;
  idempotencyKey: string | null;
  allocatedAt: string;
  expiresAt: string | null;
  releasedAt: string | null;
  metadata: unknown;
  ticket: { code: string };
  partner: { id: string; name: string };
}

// What a spreadsheet runs as a formula (OWASP "CSV injection"; ASVS 5.0 1.2.10): a cell that
// begins with = + - @, also after spaces or double quotes, and in some spreadsheets their full-width
// forms ＝ ＋ － ＠.
const FORMULA = '[\\s"]*[=+\\-@\\uFF1D\\uFF0B\\uFF0D\\uFF20]';
// Where a spreadsheet may begin a cell inside a value: after , ; or a tab (Excel in many locales and
// LibreOffice's import split on ; or tab as readily as on ,), and after CR or LF — and a reader that
// ignores the quotes splits inside them. Space and | are separators only when someone picks them in
// an import dialog, and every "a - b" would carry a mark; they are left out.
const MARK_AFTER_SEPARATOR = new RegExp(`([,;\\t\\r\\n])(?=['\\0]|${FORMULA})`, 'g');
// At the start of a value a tab or a CR (OWASP's list), and LF or NUL alike, get a mark whatever
// follows.
const MARK_AT_START = new RegExp(`^(?:[\\t\\r\\n\\0']|${FORMULA})`);

/**
 * One CSV cell. Wherever a spreadsheet splitting on , ; tab or a line end could begin a cell — the
 * start of the value, and right after each , ; tab, CR or LF in it — a single quote ' is inserted
 * when what follows begins with = + - @ (after any whitespace and double quotes; also the
 * full-width forms), with ' or with NUL; at the start of the value also when it begins with a tab,
 * CR or LF. So `Bob;=cmd` is written `"Bob;'=cmd"`: split on ; its second cell is `'=cmd`, text.
 * A ' already in such a place gets one in front too, which makes the escaping exactly reversible:
 * parse the CSV (RFC 4180), then remove the ' at the start of a cell and the ' right after each
 * , ; tab, CR or LF in it, wherever there is one — each is an added one.
 * Every value but a number is text and is quoted (RFC 4180, " doubled); a number is written bare
 * unless it was marked (a negative one is `"'-5"`); null and undefined are an empty cell.
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = String(value);
  const marked = text.replace(MARK_AFTER_SEPARATOR, "$1'");
  const cell = MARK_AT_START.test(text) ? `'${marked}` : marked;
  return typeof value === 'number' && cell === text ? cell : `"${cell.replace(/"/g, '""')}"`;
}

/** One allocation's values in HEADER's order (metadata as JSON text; null where there is none). */
export function exportValues(a: ExportedAllocation): unknown[] {
  return [
    a.sequence,
    a.id,
    a.ticket.code,
    a.holder,
    a.partner.id,
    a.partner.name,
    a.status,
    a.allocatedAt,
    a.expiresAt,
    a.releasedAt,
    a.idempotencyKey,
    a.metadata === null || a.metadata === undefined ? null : JSON.stringify(a.metadata),
  ];
}

/** One allocation as one CSV line, in HEADER's order. */
export function csvRow(a: ExportedAllocation): string {
  return exportValues(a).map(csvCell).join(',') + '\n';
}
