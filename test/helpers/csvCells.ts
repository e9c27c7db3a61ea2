// An allocation's cells in the export's column order, as the API holds them: what a CSV export
// must give back once its formula marks are removed (test/cli.test.ts, test/csvExport.test.ts).

/** The row's cells in column order, as the API holds them. */
export const cellsOf = (a: Record<string, any>): string[] =>
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
    a.metadata === null ? null : JSON.stringify(a.metadata),
  ].map((v) => (v === null ? '' : String(v)));
