#!/usr/bin/env node
// Bundles a program into one ES module (plus lazily loaded chunks) with esbuild, so that it starts
// without resolving and reading the hundreds of files of its node_modules: minimesh-identity's CPU to
// its first Certify fell from ~700 to ~420 ms with it (docs/identity.md). The bundle directory holds
// everything the program reads at run time and nothing else:
//   packages/<program>/bundle/main.mjs     the program (node main.mjs --help)
//   packages/<program>/bundle/chunk-*.mjs  code loaded on first use (server reflection, the YAML parser)
//   packages/<program>/bundle/proto/       the .proto files server reflection describes
//
//   packages/cli/bundle/page/app.js, svg.js  the viz dashboard's page scripts, where the CLI serves them
//   packages/<program>/bundle/package-lock.json  the npm packages inside the bundle, their entries copied
//                                          from the root package-lock.json (name, version, resolved,
//                                          integrity, license): what an SBOM scanner lists for the image
//
//   node scripts/bundle.mjs identity destination injector     (after npm run build)
//   node scripts/bundle.mjs --script e2e/fixtures/grpc-echo.mjs ... --out DIR
//       plain scripts (the e2e fixtures), each into one file at its own path under DIR, npm dependencies
//       included: the fixture images carry no node_modules either.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));

// Modules that find files next to themselves: where those files go in the bundle directory.
const REWRITES = [
  {
    // @minimesh/proto's protoDir: ../proto from its dist/ becomes ./proto next to the bundle.
    filter: /packages[\\/]proto[\\/]dist[\\/]index\.js$/,
    from: "new URL('../proto', import.meta.url)",
    to: "new URL('./proto/', import.meta.url)",
  },
  {
    // @grpc/reflection reads its own reflection.proto (v1 and v1alpha) from ../../proto.
    filter: /@grpc[\\/]reflection[\\/]build[\\/]src[\\/]implementations[\\/]reflection-v1(alpha)?\.js$/,
    from: "path.join(__dirname, '../../proto/",
    to: "path.join(__minimeshBundleDir, 'proto/",
  },
];

const rewritePlugin = {
  name: 'minimesh-bundle-paths',
  setup(b) {
    for (const r of REWRITES) {
      b.onLoad({ filter: r.filter }, async (args) => {
        const { readFile } = await import('node:fs/promises');
        const text = await readFile(args.path, 'utf8');
        if (!text.includes(r.from)) throw new Error(`${args.path}: expected to find ${r.from} (dependency changed?)`);
        return { contents: text.split(r.from).join(r.to), loader: 'js', resolveDir: dirname(args.path) };
      });
    }
  },
};

// Programs with a second executable: its bundle entry beside main.mjs (proxy-init's image also runs CNI
// mode's init container, minimesh-network-validator, as /app/network-validator.mjs).
const EXTRA_ENTRIES = { 'proxy-init': ['network-validator'] };

export async function bundle(program) {
  const pkgDir = join(root, 'packages', program);
  const entry = join(pkgDir, 'dist', 'main.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run npm run build first`);
  const entryPoints = { main: entry };
  for (const name of EXTRA_ENTRIES[program] ?? []) {
    entryPoints[name] = join(pkgDir, 'dist', `${name}.js`);
    if (!existsSync(entryPoints[name])) throw new Error(`${entryPoints[name]} is missing: run npm run build first`);
  }
  const out = join(pkgDir, 'bundle');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const result = await build({
    entryPoints,
    outdir: out,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    minify: process.env.BUNDLE_MINIFY !== '0',
    // Bundled CommonJS still calls require() for Node's own modules.
    banner: {
      js: [
        "import { createRequire as __minimeshCreateRequire } from 'node:module';",
        "import { fileURLToPath as __minimeshFileURLToPath } from 'node:url';",
        'const require = __minimeshCreateRequire(import.meta.url);',
        'const __minimeshBundleDir = __minimeshFileURLToPath(new URL(".", import.meta.url));',
      ].join(' '),
    },
    plugins: [rewritePlugin],
    legalComments: 'eof',
    logLevel: 'warning',
    metafile: true,
  });
  // Run-time files: minimesh's .proto files, and @grpc/reflection's when the program serves reflection.
  cpSync(join(root, 'packages', 'proto', 'proto'), join(out, 'proto'), { recursive: true });
  const inputs = Object.keys(result.metafile.inputs);
  if (inputs.some((i) => i.includes('@grpc/reflection'))) {
    // .../build/proto/grpc/reflection/v1/reflection.proto → .../build/proto/grpc
    const grpcDir = join(
      dirname(require.resolve('@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto')),
      '..',
      '..',
    );
    cpSync(grpcDir, join(out, 'proto', 'grpc'), { recursive: true });
  }
  // The viz dashboard (served by the CLI) reads its page scripts next to its own module: next to the bundle.
  if (inputs.some((i) => /packages[\\/]viz[\\/]dist[\\/]dashboard[\\/]server\.js$/.test(i))) {
    const dashboard = join(root, 'packages', 'viz', 'dist', 'dashboard');
    mkdirSync(join(out, 'page'), { recursive: true });
    cpSync(join(dashboard, 'page', 'app.js'), join(out, 'page', 'app.js'));
    cpSync(join(dashboard, 'svg.js'), join(out, 'svg.js'));
  }
  writeBundleLock(out, `@minimesh/${program}`, inputs);
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  return { program, out, files: Object.keys(result.metafile.outputs).length, bytes };
}

/**
 * The npm packages esbuild took files from, as package-lock.json keys: "node_modules/@grpc/grpc-js/build/
 * src/x.js" → "node_modules/@grpc/grpc-js"; a nested copy keeps its path ("node_modules/a/node_modules/b").
 */
export function bundledPackages(inputs) {
  const dirs = new Set();
  for (const raw of inputs) {
    const input = raw.replaceAll('\\', '/');
    const first = input.indexOf('node_modules/');
    if (first < 0) continue;
    const last = input.lastIndexOf('node_modules/');
    const parts = input.slice(last + 'node_modules/'.length).split('/');
    const name = parts[0]?.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
    if (!name || name.startsWith('@minimesh/')) continue;
    dirs.add(`${input.slice(first, last)}node_modules/${name}`);
  }
  return [...dirs].sort();
}

/** package-lock.json (v3) beside the bundle with the root lock's entries of the packages it holds. */
function writeBundleLock(out, name, inputs) {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const packages = { '': { name, version: lock.version } };
  for (const dir of bundledPackages(inputs)) {
    const entry = lock.packages[dir];
    if (!entry) throw new Error(`${dir} is bundled into ${name} but has no entry in package-lock.json`);
    const { version, resolved, integrity, license } = entry;
    packages[dir] = { version, resolved, integrity, ...(license ? { license } : {}) };
  }
  const text = { name, version: lock.version, lockfileVersion: 3, requires: true, packages };
  writeFileSync(join(out, 'package-lock.json'), `${JSON.stringify(text, null, 2)}\n`);
}

/** One plain script (path relative to the repository) into one file at the same path under outDir. */
export async function bundleScript(script, outDir) {
  const outfile = join(outDir, relative(root, resolve(root, script)));
  const result = await build({
    entryPoints: [resolve(root, script)],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    banner: {
      js: "import { createRequire as __minimeshCreateRequire } from 'node:module'; const require = __minimeshCreateRequire(import.meta.url);",
    },
    legalComments: 'eof',
    logLevel: 'warning',
    metafile: true,
  });
  // The scripts of one directory share one package-lock.json there (each run adds its packages).
  const lockDir = dirname(outfile);
  const prior = existsSync(join(lockDir, 'package-lock.json'))
    ? Object.keys(JSON.parse(readFileSync(join(lockDir, 'package-lock.json'), 'utf8')).packages).filter(Boolean)
    : [];
  writeBundleLock(lockDir, '@minimesh/e2e', [...prior.map((d) => `${d}/`), ...Object.keys(result.metafile.inputs)]);
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  return { program: script, out: outfile, files: 1, bytes };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const scripts = args[0] === '--script';
  const outAt = args.indexOf('--out');
  const names = args.filter((a, i) => !a.startsWith('--') && (outAt < 0 || i !== outAt + 1));
  if (names.length === 0 || (scripts && (outAt < 0 || !args[outAt + 1]))) {
    process.stderr.write(
      'usage: node scripts/bundle.mjs <program>...   (e.g. identity destination injector)\n' +
        '       node scripts/bundle.mjs --script <file.mjs>... --out <dir>\n',
    );
    process.exit(2);
  }
  for (const p of names) {
    const r = scripts ? await bundleScript(p, resolve(args[outAt + 1])) : await bundle(p);
    process.stdout.write(`bundled ${r.program}: ${r.files} files, ${(r.bytes / 1024).toFixed(0)} KiB in ${r.out}\n`);
  }
}
