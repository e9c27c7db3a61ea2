// Types of bin/csv.js for the console (TypeScript); the CLI uses the JavaScript directly.
export const EXPORT_QUERY: string;
export const HEADER: string;
export function csvCell(value: unknown): string;
export function csvRow(allocation: unknown): string;
