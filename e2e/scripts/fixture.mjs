#!/usr/bin/env node
// The entry point of the fixture images (Dockerfile, target fixture): starts e2e/fixtures/$FIXTURE.mjs
// with this process's arguments. The images have no shell to pick the script with.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const name = process.env.FIXTURE ?? '';
const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', `${name}.mjs`);
if (!/^[\w-]+$/.test(name) || !existsSync(script)) {
  process.stderr.write(`fixture: FIXTURE="${name}": expected the name of a file e2e/fixtures/<name>.mjs\n`);
  process.exit(2);
}
await import(pathToFileURL(script).href);
