#!/usr/bin/env node
// The operators' CLI (npx tessera): src/cli/main.ts, run through tsx's require hook (tsx is a
// dependency of the project, and caches what it compiles).
'use strict';
require('tsx/cjs');
require('../src/cli/main.ts').run(process.argv.slice(2));
