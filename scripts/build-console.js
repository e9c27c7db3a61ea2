#!/usr/bin/env node
// Builds the operators' console (console/src) into console/dist with esbuild: one script and one
// stylesheet, everything from npm packages, nothing fetched at run time. Runs after npm install.
const path = require('node:path');
const { copyFileSync, mkdirSync } = require('node:fs');
const esbuild = require('esbuild');

const root = path.resolve(__dirname, '..');
const out = path.join(root, 'console/dist');
mkdirSync(out, { recursive: true });
esbuild
  .build({
    entryPoints: { app: path.join(root, 'console/src/main.ts') },
    bundle: true,
    minify: true,
    sourcemap: true,
    format: 'iife',
    target: ['chrome110', 'firefox110', 'safari16'],
    outdir: out,
    logLevel: 'warning',
  })
  .then(() => copyFileSync(path.join(root, 'console/index.html'), path.join(out, 'index.html')))
  .catch((error) => {
    console.error(error);
    process.exit(1);
  });
