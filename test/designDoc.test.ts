// docs/DESIGN.md describes the claim gate — its signature and the order of its locks — and says
// where the database code lives. Those descriptions must not fall behind the code: the signature and
// the ordered lock kinds written in DESIGN.md are compared here with what
// prisma/functions/tessera_claim_gate.sql contains, and its list of function files with the folder.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { FUNCTIONS_DIR, readFunctions } from '../src/db/migrate';

const DESIGN = readFileSync(path.resolve(__dirname, '../docs/DESIGN.md'), 'utf8');
const GATE = readFileSync(path.join(FUNCTIONS_DIR, 'tessera_claim_gate.sql'), 'utf8');

/** The text between two markers (the first after `from`), or a failure that names them. */
function between(text: string, from: string, to: string): string {
  const start = text.indexOf(from);
  const end = start < 0 ? -1 : text.indexOf(to, start + from.length);
  if (start < 0 || end < 0) throw new Error(`docs/DESIGN.md no longer has "${from}" … "${to}"`);
  return text.slice(start + from.length, end);
}

const squash = (text: string) => text.replace(/\s+/g, ' ').replace(/\( /g, '(').replace(/ \)/g, ')').trim();
/** `name TYPE, …` with the types in lower case, as PostgreSQL prints them. */
const columns = (list: string) =>
  list
    .split(',')
    .map((part) => squash(part).replace(/^(\S+) (.+)$/, (_m, name: string, type: string) => `${name} ${type.toLowerCase()}`))
    .join(', ');

/** The gate's signature from its file: `tessera_claim_gate(…) RETURNS TABLE(…)`. */
function signatureInFile(): string {
  const m = /CREATE OR REPLACE FUNCTION "tessera_claim_gate"\(([^)]*)\)\s*RETURNS TABLE\s*\(([^)]*)\)/.exec(GATE);
  if (!m) throw new Error('prisma/functions/tessera_claim_gate.sql: no CREATE OR REPLACE FUNCTION "tessera_claim_gate"(…) RETURNS TABLE (…)');
  return `tessera_claim_gate(${columns(m[1]!)}) RETURNS TABLE(${columns(m[2]!)})`;
}

/** The locks a text takes or names, in order: advisory locks (tessera_lock) by class and mode, row locks by table. */
function lockKinds(text: string): string[] {
  const kinds: string[] = [];
  const re = /tessera_lock\('(\w+)',[^;`]*?(, true)?\)|\bFROM\s+(\w+)[^;`]*?\bFOR\s+(UPDATE|NO KEY UPDATE|SHARE|KEY SHARE)\b/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    kinds.push(m[1] ? `${m[1]} lock, ${m[2] ? 'shared' : 'exclusive'}` : `row lock on ${m[3]}, FOR ${m[4]}`);
  }
  return kinds;
}

const gateSection = () => between(DESIGN, '1. **Gate**', '2. **Pick**');

test("docs/DESIGN.md shows tessera_claim_gate's current signature", () => {
  const block = between(gateSection(), '```', '```');
  expect(squash(block)).toBe(signatureInFile());
});

test('docs/DESIGN.md lists the locks of tessera_claim_gate in the order its body takes them', () => {
  const body = between(GATE, 'AS $$', '$$;');
  const inCode = lockKinds(body);
  // The rule is really applied: the gate's four locks are found.
  expect(inCode).toEqual([
    'campaign lock, shared',
    'idempotency_key lock, exclusive',
    'holder lock, exclusive',
    'row lock on partner_quotas, FOR UPDATE',
  ]);
  expect(lockKinds(gateSection())).toEqual(inCode);
});

test('docs/DESIGN.md points to prisma/functions/ and names every function file there, and no old migration', () => {
  const section = between(DESIGN, '## Where the database code lives', '\n## ');
  expect(section).toContain('prisma/functions/');
  const named = [...new Set([...section.matchAll(/`(tessera_\w+)`/g)].map((m) => m[1]))].sort();
  expect(named).toEqual(readFunctions().map((f) => f.name));
  expect(DESIGN).not.toMatch(/first migration|20261129\d{6}/);
});
