// Types of bin/csv.js for the console (TypeScript); the CLI uses the JavaScript directly.
export const EXPORT_QUERY: string;
export const HEADER: string;
export const FORMULA_START: RegExp;
export function csvCell(value: unknown): string;
export function csvRow(allocation: unknown): string;
