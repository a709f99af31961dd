#!/usr/bin/env node
// Builds minimesh-cni as a Node single executable application (docs/cni.md, "Why a Node SEA"): the
// plugin bundled into one CommonJS file by esbuild, turned into a SEA blob by the running node
// (--experimental-sea-config, with V8's code cache), and injected with postject into a stripped copy
// of that same node binary. The result is one file the installer copies onto a node, which runs
// without Node installed there (it needs the host's glibc and libstdc++, as any Node binary does).
//
//   node packages/cni/scripts/build-sea.mjs [OUT_DIR]     (after npm run build; default packages/cni/sea)
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = resolve(process.argv[2] ?? join(pkgDir, 'sea'));
const entry = join(pkgDir, 'dist', 'plugin-main.js');
const require = createRequire(join(pkgDir, 'package.json'));
/** Runs a build step; its output is shown only when it fails. */
function quiet(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.stdout}${r.stderr}`);
}
const mb = (p) => `${(statSync(p).size / 1e6).toFixed(1)} MB`;

statSync(entry); // a missing build fails here, with the path
mkdirSync(out, { recursive: true });
const script = join(out, 'minimesh-cni.cjs');
await build({
  entryPoints: [entry],
  outfile: script,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  minify: true,
  legalComments: 'eof',
  logLevel: 'warning',
});

const blob = join(out, 'minimesh-cni.blob');
const seaConfig = join(out, 'sea-config.json');
writeFileSync(
  seaConfig,
  JSON.stringify({ main: script, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true }),
);
quiet(process.execPath, ['--experimental-sea-config', seaConfig]);

const bin = join(out, 'minimesh-cni');
const tmp = `${bin}.tmp`;
rmSync(tmp, { force: true });
copyFileSync(process.execPath, tmp);
chmodSync(tmp, 0o755);
// Node's release binaries carry debug symbols; strip them before the blob goes in (after, the
// injected note would be lost). Without binutils the SEA is just bigger.
if (spawnSync('strip', ['--version'], { stdio: 'ignore' }).status === 0)
  execFileSync('strip', [tmp], { stdio: 'ignore' });
const postject = join(dirname(require.resolve('postject/package.json')), 'dist', 'cli.js');
// postject warns about every note section of a stripped binary ("Can't find string offset"): harmless.
quiet(process.execPath, [
  postject,
  tmp,
  'NODE_SEA_BLOB',
  blob,
  '--sentinel-fuse',
  'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2',
]);
const version = execFileSync(tmp, [], { env: { CNI_COMMAND: 'VERSION' } })
  .toString()
  .trim();
if (!version.includes('"supportedVersions"')) throw new Error(`the SEA answered VERSION with ${version}`);
copyFileSync(tmp, bin);
chmodSync(bin, 0o755);
rmSync(tmp);
rmSync(blob);
rmSync(seaConfig);
process.stderr.write(
  `[build-sea] ${bin}: ${mb(bin)} (node ${process.version} + ${mb(script)} script); VERSION → ${version}\n`,
);
