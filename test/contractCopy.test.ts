// contract/ is the project's copy of the public API contract. Where a checkout has the upstream
// contract beside the repository (our own machines and CI), the copy must match it byte for byte;
// a user's clone has none, and this test then skips, saying so.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

const upstream = path.resolve(__dirname, '../../shared/contract');
const copy = path.resolve(__dirname, '../contract');

const files = (root: string): string[] =>
  readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.graphql'))
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .sort();

if (existsSync(upstream)) {
  test('contract/ holds the same files as the upstream contract', () => {
    expect(files(copy)).toEqual(files(upstream));
  });
  test.each(existsSync(upstream) ? files(upstream) : [])('contract/%s matches the upstream contract', (file) => {
    expect(readFileSync(path.join(copy, file), 'utf8')).toBe(readFileSync(path.join(upstream, file), 'utf8'));
  });
} else {
  test.skip(`contract/ matches the upstream contract (skipped: no ${upstream} beside this repository)`, () => undefined);
}
