#!/usr/bin/env node
// `prisma generate` without network access. Every Prisma CLI command first tries to download a
// native schema engine from Prisma's CDN, which is unreachable here; `generate` does not need it,
// so it is pointed at an existing file (docs/TOOLCHAIN.md). Never do this for `migrate`: with a fake
// engine it silently does nothing — migrations are applied by src/db/migrate.ts instead.
const { spawnSync } = require('node:child_process');

const result = spawnSync(process.execPath, [require.resolve('prisma/build/index.js'), 'generate'], {
  stdio: 'inherit',
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, CHECKPOINT_DISABLE: '1' },
});
process.exit(result.status ?? 1);
