// The allocations export as CSV, shared by `tessera export` (bin/tessera.js) and the console's
// Export button (console/src): one query, one header, one escaping (docs/SECURITY.md, CSV exports).
'use strict';

const EXPORT_QUERY = `query($id: ID!, $after: String) {
  campaign(id: $id) {
    allocations(first: 100, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node { id sequence status holder idempotencyKey allocatedAt expiresAt releasedAt metadata ticket { code } partner { id name } } }
    }
  }
}`;

const HEADER = 'sequence,allocation_id,ticket_code,holder,partner_id,partner_name,status,allocated_at,expires_at,released_at,idempotency_key,metadata\n';

// A cell a spreadsheet could take for a formula (OWASP "CSV injection"; ASVS 5.0 1.2.10): = + - @
// first, after any spaces (or their full-width forms, which some spreadsheets accept), or a tab,
// CR, LF or NUL first. A leading ' is escaped too, so that "remove one leading '" always gives the
// exact value back.
const FORMULA_START = /^(?:[\t\r\n\0']|\s*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/;

/** One CSV cell: formula-safe (a ' in front, see above) and quoted per RFC 4180 when needed. */
function csvCell(value) {
  if (value === null || value === undefined) return '';
  let text = String(value);
  const escape = FORMULA_START.test(text);
  if (escape) text = `'${text}`;
  return escape || /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const csvRow = (a) =>
  [
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
  ]
    .map(csvCell)
    .join(',') + '\n';

module.exports = { EXPORT_QUERY, HEADER, csvCell, csvRow, FORMULA_START };
