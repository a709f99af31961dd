// Container images for the node: the docker-archive tars that `bash scripts/images.sh build` leaves in
// ~/.cache/minimesh/images, imported into containerd (`ctr -n k8s.io images import`). containerd's root
// is in the cache too, so a tar is imported again only when it changed (size or mtime), not on every `up`.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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
  [ref: string]: { tar: string; size: number; mtimeMs: number };
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

/** Image tars that are built but not (or not in this version) in containerd. */
export function staleImages(images: ImageTar[] = listImages()): ImageTar[] {
  const record = readRecord();
  return images.filter((i) => {
    if (!existsSync(i.tar)) return false;
    const st = statSync(i.tar);
    const r = record[i.ref];
    return !r || r.tar !== i.tar || r.size !== st.size || r.mtimeMs !== st.mtimeMs;
  });
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
  for (const i of todo) {
    const st = statSync(i.tar);
    try {
      await ctr(['images', 'import', i.tar]);
    } catch (err) {
      const msg = ((err as { stderr?: string }).stderr ?? (err as Error).message).trim().split('\n').pop();
      throw new Error(`local cluster: importing ${i.ref} from ${i.tar} into containerd failed: ${msg}`, {
        cause: err,
      });
    }
    record[i.ref] = { tar: i.tar, size: st.size, mtimeMs: st.mtimeMs };
  }
  mkdirSync(dirname(recordFile()), { recursive: true });
  writeFileSync(recordFile(), `${JSON.stringify(record, null, 2)}\n`);
  log(`imported ${todo.length} image(s) into containerd in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return todo.map((i) => i.ref);
}
