#!/usr/bin/env node
// The CLI as an npm package: `npm run pack:cli -- <out dir>` bundles packages/cli (built by turbo first)
// with its workspace and npm dependencies into one file, bin/minimesh.mjs, and packs it as
// <out dir>/minimesh-cli-<version>.tgz: no dependencies to install, the version of the root package.json
// (scripts/version.mjs). The release workflow publishes that tarball.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = resolve(process.argv[2] ?? join(root, 'dist-cli'));
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
const cli = JSON.parse(readFileSync(join(root, 'packages', 'cli', 'package.json'), 'utf8'));

execFileSync('npx', ['turbo', 'run', 'build', '--filter=@minimesh/cli...', '--output-logs=errors-only'], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
});

const pkgDir = join(out, 'package');
rmSync(pkgDir, { recursive: true, force: true });
mkdirSync(join(pkgDir, 'bin'), { recursive: true });
await build({
  entryPoints: [join(root, 'packages', 'cli', 'dist', 'main.js')],
  outfile: join(pkgDir, 'bin', 'minimesh.mjs'),
  bundle: true,
  minify: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  // Some dependencies are CommonJS and call require(): give the ES module one.
  banner: {
    js: "import { createRequire as __minimeshRequire } from 'node:module'; const require = __minimeshRequire(import.meta.url);",
  },
  legalComments: 'eof',
  logLevel: 'warning',
});
writeFileSync(
  join(pkgDir, 'package.json'),
  `${JSON.stringify(
    {
      name: cli.name,
      version,
      description: cli.description,
      type: 'module',
      bin: { minimesh: './bin/minimesh.mjs' },
      files: ['bin'],
      engines: { node: '>=20' },
    },
    null,
    2,
  )}\n`,
);
writeFileSync(
  join(pkgDir, 'README.md'),
  '# minimesh\n\nThe minimesh command line: `minimesh inject`, `check`, `certs create`, `explain`. See https://github.com/minimesh/minimesh.\n',
);
const tgz = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], {
  cwd: pkgDir,
  encoding: 'utf8',
}).trim();
process.stdout.write(`${join(out, tgz)}\n`);
