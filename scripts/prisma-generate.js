#!/usr/bin/env node
// `prisma generate` without network access. Every Prisma CLI command first tries to download a
// native schema engine from Prisma's CDN, which is unreachable here; `generate` does not need it,
// so it is pointed at an existing file (docs/TOOLCHAIN.md). Never do this for `migrate`: with a fake
// engine it silently does nothing — migrations are applied by src/db/migrate.ts instead.
const { spawnSync } = require('node:child_process');

//
// JITI_FS_CACHE=false: Prisma reads prisma.config.ts through jiti, which otherwise creates
// node_modules/.cache/jiti. This runs after npm wrote its hidden lockfile, so that new folder left
// node_modules newer than the lockfile and every later npm command that reads the tree (npm ls,
// npm install, npm exec of a package's bin) re-read all 877 packages instead (issue 27).
const result = spawnSync(process.execPath, [require.resolve('prisma/build/index.js'), 'generate'], {
  stdio: 'inherit',
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, CHECKPOINT_DISABLE: '1', JITI_FS_CACHE: 'false' },
});
process.exit(result.status ?? 1);
