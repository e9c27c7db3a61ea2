// An allocation's cells in the export's column order, as the API holds them: what a CSV export
// must give back once its formula marks are removed (test/cli.test.ts, test/csvExport.test.ts).

import { exportValues, type ExportedAllocation } from '../../src/cli/csv';

/** The row's cells in column order, as the API holds them. */
export const cellsOf = (a: Record<string, any>): string[] => exportValues(a as ExportedAllocation).map((v) => (v === null ? '' : String(v)));
