#!/usr/bin/env node
// minimesh's version has one source: the root package.json's "version". Everything else that names it
// is derived from it by this script (`set`) and checked against it (`check`, in npm test):
//   - charts/minimesh/Chart.yaml and charts/minimesh-crds/Chart.yaml: version and appVersion (image tags
//     default to appVersion; the CRDs' chart is released with the control plane's),
//   - every workspace package.json (the CLI is published to npm with it) and their @minimesh/* ranges,
//   - MINIMESH_VERSION in packages/config (the injector's default proxy and proxy-init image tags),
//   - the image tags: scripts/images.sh reads package.json itself, the workflows call scripts/images.sh.
//
//   node scripts/version.mjs get          prints the version
//   node scripts/version.mjs check        exit 1 with one line per place that disagrees
//   node scripts/version.mjs set 0.2.0    writes it everywhere (then: npm install --package-lock-only)
//   MINIMESH_ROOT=<dir> runs it on another checkout (the tests use a copy).
import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(process.env.MINIMESH_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

function workspaceManifests() {
  const dirs = readdirSync(join(root, 'packages'), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(root, 'packages', d.name, 'package.json')))
    .map((d) => join(root, 'packages', d.name, 'package.json'));
  return [...dirs, join(root, 'e2e', 'package.json')];
}

/** Every derived place: where it is, what it says now, and how to write a new version there. */
function places() {
  const out = [];
  for (const chart of ['minimesh', 'minimesh-crds'].map((c) => join(root, 'charts', c, 'Chart.yaml'))) {
    for (const [field, quote] of [
      ['version', ''],
      ['appVersion', '"'],
    ]) {
      const re = new RegExp(`^${field}: *"?([^"\\n]*)"?$`, 'm');
      out.push({
        where: `${relative(root, chart)} ${field}`,
        file: chart,
        read: (text) => re.exec(text)?.[1],
        write: (text, v) => text.replace(re, `${field}: ${quote}${v}${quote}`),
      });
    }
  }
  for (const file of workspaceManifests()) {
    out.push({
      where: `${relative(root, file)} version`,
      file,
      read: (text) => JSON.parse(text).version,
      write: (text, v) => text.replace(/^( {2}"version": )"[^"]*"/m, `$1"${v}"`),
    });
    const pkg = JSON.parse(readFileSync(file, 'utf8'));
    for (const section of ['dependencies', 'devDependencies', 'peerDependencies']) {
      for (const name of Object.keys(pkg[section] ?? {}).filter((n) => n.startsWith('@minimesh/'))) {
        const re = new RegExp(`("${name.replace('/', '\\/')}": )"\\^([^"]*)"`);
        out.push({
          where: `${relative(root, file)} ${section} ${name}`,
          file,
          read: (text) => re.exec(text)?.[2],
          write: (text, v) => text.replace(re, `$1"^${v}"`),
        });
      }
    }
  }
  const config = join(root, 'packages', 'config', 'src', 'version.ts');
  const re = /^export const MINIMESH_VERSION = '([^']*)';$/m;
  out.push({
    where: `${relative(root, config)} MINIMESH_VERSION`,
    file: config,
    read: (text) => re.exec(text)?.[1],
    write: (text, v) => text.replace(re, `export const MINIMESH_VERSION = '${v}';`),
  });
  return out;
}

export function getVersion() {
  return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
}

/** One line per derived place that does not say the root version (empty: all agree). */
export function check() {
  const version = getVersion();
  const problems = [];
  if (!SEMVER.test(version)) problems.push(`package.json version: "${version}" is not a version such as 0.1.0`);
  for (const p of places()) {
    const found = p.read(readFileSync(p.file, 'utf8'));
    if (found !== version)
      problems.push(`${p.where}: ${found === undefined ? 'not found' : `"${found}"`}, expected "${version}"`);
  }
  return problems;
}

export function setVersion(version) {
  if (!SEMVER.test(version)) throw new Error(`version "${version}" is not valid: expected a version such as 0.2.0`);
  const rootFile = join(root, 'package.json');
  writeFileSync(rootFile, readFileSync(rootFile, 'utf8').replace(/^( {2}"version": )"[^"]*"/m, `$1"${version}"`));
  for (const p of places()) {
    const text = readFileSync(p.file, 'utf8');
    const next = p.write(text, version);
    if (p.read(next) !== version) throw new Error(`${p.where}: could not write the version`);
    writeFileSync(p.file, next);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [cmd, arg] = process.argv.slice(2);
  try {
    if (cmd === 'get') process.stdout.write(`${getVersion()}\n`);
    else if (cmd === 'check') {
      const problems = check();
      for (const p of problems) process.stderr.write(`version: ${p}\n`);
      process.exitCode = problems.length === 0 ? 0 : 1;
    } else if (cmd === 'set' && arg) {
      setVersion(arg);
      process.stdout.write(`version ${arg} written; now run: npm install --package-lock-only --ignore-scripts\n`);
    } else {
      process.stderr.write('usage: node scripts/version.mjs get | check | set <version>\n');
      process.exitCode = 2;
    }
  } catch (err) {
    process.stderr.write(`version: ${err.message}\n`);
    process.exitCode = 2;
  }
}
