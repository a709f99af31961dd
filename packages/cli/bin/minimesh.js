#!/usr/bin/env node
// The `minimesh` command of the repository (npm links it: `npx minimesh ...` after `npm run setup`):
// runs the built CLI, or says in one line how to build it. The published package bundles dist/main.js.
import { existsSync } from 'node:fs';

const main = new URL('../dist/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('minimesh: the CLI is not built: run `npm run setup` (or `npm run build`) first\n');
  process.exit(1);
}
await import(main.href);
