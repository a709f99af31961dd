// Container images for the node: the docker-archive tars that `bash scripts/images.sh build` leaves in
// ~/.cache/minimesh/images, imported into containerd (`ctr -n k8s.io images import`). containerd's root
// is in the cache too, so a tar is imported again only when it changed (size or mtime), not on every `up`.
import { execFile, execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { COREDNS_IMAGE, IMAGES_BUILD_COMMAND, PAUSE_IMAGE, containerdRoot, repoRoot } from './paths.js';

const execFileP = promisify(execFile);

export interface ImageTar {
  ref: string;
  tar: string;
}

/** Parses `images.sh list` output: one `<image ref> <tar path>` per line. */
export function parseImageList(text: string): ImageTar[] {
  const out: ImageTar[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [ref, tar, ...rest] = line.split(/\s+/);
    if (!ref || !tar || rest.length > 0)
      throw new Error(`image list line "${line}" is not valid: expected <ref> <tar>`);
    out.push({ ref, tar });
  }
  return out;
}

/**
 * The images this checkout builds: `bash scripts/images.sh list`, or the file MINIMESH_IMAGES_LIST
 * (same format) when set. No list at all (no scripts/images.sh) is an empty list.
 */
export function listImages(): ImageTar[] {
  const file = process.env.MINIMESH_IMAGES_LIST;
  if (file) return parseImageList(readFileSync(file, 'utf8'));
  const script = join(repoRoot, 'scripts', 'images.sh');
  if (!existsSync(script)) return [];
  return parseImageList(
    execFileSync('bash', [script, 'list'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], cwd: repoRoot }),
  );
}

interface Imported {
  [ref: string]: { tar: string; size: number; mtimeMs: number; imageId?: string };
}

/**
 * The image ID (config digest) a docker-archive tar holds for `ref`, from its manifest.json, reading
 * only the tar's headers and that one file (a 300 MB tar costs a few dozen small reads).
 */
export function tarImageId(tar: string, ref: string): string | undefined {
  const fd = openSync(tar, 'r');
  try {
    const header = Buffer.alloc(512);
    let pos = 0;
    for (;;) {
      if (readSync(fd, header, 0, 512, pos) < 512 || header.every((b) => b === 0)) return undefined;
      const name = header.toString('utf8', 0, 100).replace(/\0.*$/s, '');
      const prefix = header.toString('utf8', 345, 500).replace(/\0.*$/s, '');
      const size = parseInt(header.toString('utf8', 124, 136).replace(/\0.*$/s, '').trim() || '0', 8);
      const full = prefix ? `${prefix}/${name}` : name;
      if (full === 'manifest.json' || full === './manifest.json') {
        const body = Buffer.alloc(size);
        readSync(fd, body, 0, size, pos + 512);
        const manifest = JSON.parse(body.toString('utf8')) as { Config: string; RepoTags?: string[] }[];
        const entry = manifest.find((m) => m.RepoTags?.includes(ref)) ?? manifest[0];
        const hex = /([0-9a-f]{64})/.exec(entry?.Config ?? '')?.[1];
        return hex ? `sha256:${hex}` : undefined;
      }
      pos += 512 + Math.ceil(size / 512) * 512;
    }
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function recordFile(): string {
  return join(containerdRoot(), 'minimesh-imported.json');
}

function readRecord(): Imported {
  try {
    return JSON.parse(readFileSync(recordFile(), 'utf8')) as Imported;
  } catch {
    return {};
  }
}

/**
 * Image tars that are built but not (or not in this version) in containerd. A tar rewritten with the
 * same image ID (an unchanged rebuild) is not stale: only its size and mtime are recorded again.
 */
export function staleImages(images: ImageTar[] = listImages()): ImageTar[] {
  const record = readRecord();
  let touched = false;
  const stale = images.filter((i) => {
    if (!existsSync(i.tar)) return false;
    const st = statSync(i.tar);
    const r = record[i.ref];
    if (!r) return true;
    if (r.tar === i.tar && r.size === st.size && r.mtimeMs === st.mtimeMs) return false;
    const id = tarImageId(i.tar, i.ref);
    if (id === undefined || id !== r.imageId) return true;
    record[i.ref] = { ...r, tar: i.tar, size: st.size, mtimeMs: st.mtimeMs };
    touched = true;
    return false;
  });
  if (touched) writeRecord(record);
  return stale;
}

function writeRecord(record: Imported): void {
  try {
    mkdirSync(dirname(recordFile()), { recursive: true });
    writeFileSync(recordFile(), `${JSON.stringify(record, null, 2)}\n`);
  } catch {
    /* read-only cache: import again next time */
  }
}

/** The images the node cannot start without, with the one line that says how to get them. */
export function requireNodeImages(images: ImageTar[]): void {
  for (const ref of [PAUSE_IMAGE, COREDNS_IMAGE]) {
    const entry = images.find((i) => i.ref === ref);
    if (!entry || !existsSync(entry.tar))
      throw new Error(
        `local cluster: image ${ref} is not built${entry ? ` (${entry.tar} is missing)` : ''}: run ${IMAGES_BUILD_COMMAND}`,
      );
  }
}

export type Ctr = (args: string[]) => Promise<string>;

/** ctr against the node's containerd, in the k8s.io namespace (the CRI plugin's). */
export function ctrFor(socket: string): Ctr {
  return async (args) =>
    (await execFileP('ctr', ['--address', socket, '--namespace', 'k8s.io', ...args], { maxBuffer: 64 << 20 })).stdout;
}

/** Imports every stale image (and any the record lists but containerd lost); returns the refs imported. */
export async function importImages(ctr: Ctr, images: ImageTar[], log: (m: string) => void): Promise<string[]> {
  const present = new Set(
    (await ctr(['images', 'ls', '-q']))
      .split('\n')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  const stale = new Set(staleImages(images).map((i) => i.ref));
  const todo = images.filter((i) => existsSync(i.tar) && (stale.has(i.ref) || !present.has(i.ref)));
  if (todo.length === 0) return [];
  const record = readRecord();
  const started = Date.now();
  const mb = Math.round(todo.reduce((n, i) => n + statSync(i.tar).size, 0) / 1e6);
  log(`importing ${todo.length} image(s) into containerd (${mb} MB of docker-archive tars)`);
  // Two at a time: an import is mostly reading and hashing the tar, and this machine has two cores.
  // Each tar once, whatever number of refs name it: two concurrent imports of one image race in
  // containerd ("already exists").
  const byTar = new Map<string, ImageTar[]>();
  for (const i of todo) byTar.set(i.tar, [...(byTar.get(i.tar) ?? []), i]);
  const queue = [...byTar.values()];
  const worker = async () => {
    for (let refs = queue.shift(); refs; refs = queue.shift()) {
      const tar = refs[0]!.tar;
      const st = statSync(tar);
      try {
        await ctr(['images', 'import', tar]);
      } catch (err) {
        const msg = ((err as { stderr?: string }).stderr ?? (err as Error).message).trim().split('\n').pop();
        const names = refs.map((i) => i.ref).join(', ');
        throw new Error(`local cluster: importing ${names} from ${tar} into containerd failed: ${msg}`, {
          cause: err,
        });
      }
      for (const i of refs) {
        const imageId = tarImageId(tar, i.ref);
        record[i.ref] = { tar, size: st.size, mtimeMs: st.mtimeMs, ...(imageId ? { imageId } : {}) };
      }
    }
  };
  await Promise.all([worker(), worker()]);
  writeRecord(record);
  log(`imported ${todo.length} image(s) into containerd in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return todo.map((i) => i.ref);
}
