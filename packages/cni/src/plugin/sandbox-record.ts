// What minimesh-cni wrote into a sandbox, kept on the node (one JSON file per sandbox under the
// state directory) for DEL (which rules to remove, without asking the API server), CHECK, and the
// installer's /pods endpoint, through which `minimesh explain` reads a CNI-mode pod's nat table.
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface SandboxRecord {
  containerId: string;
  namespace: string;
  name: string;
  uid: string | undefined;
  node: string | undefined;
  netns: string;
  /** The proxy-init arguments applied. */
  args: string[];
  /** The iptables mode actually used (after any fallback). */
  mode: string;
  /** RFC 3339. */
  appliedAt: string;
  /** `iptables-save -t nat` of each family right after the transaction, keyed "4" / "6". */
  saved: Record<string, string>;
}

const pods = (stateDir: string) => join(stateDir, 'pods');
/** Container ids are hex from every runtime we know; anything else never becomes a path. */
const fileOf = (stateDir: string, containerId: string) => {
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(containerId) || containerId.startsWith('.'))
    throw new Error(`container id ${JSON.stringify(containerId)} is not a safe file name`);
  return join(pods(stateDir), `${containerId}.json`);
};

export async function writeRecord(stateDir: string, record: SandboxRecord): Promise<void> {
  await mkdir(pods(stateDir), { recursive: true, mode: 0o755 });
  const file = fileOf(stateDir, record.containerId);
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o644 });
  await rename(tmp, file);
}

export async function readRecord(stateDir: string, containerId: string): Promise<SandboxRecord | undefined> {
  try {
    return JSON.parse(await readFile(fileOf(stateDir, containerId), 'utf8')) as SandboxRecord;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export async function removeRecord(stateDir: string, containerId: string): Promise<void> {
  await rm(fileOf(stateDir, containerId), { force: true });
}

/** Every record in the state directory (the installer serves them). */
export async function listRecords(stateDir: string): Promise<SandboxRecord[]> {
  let names: string[];
  try {
    names = await readdir(pods(stateDir));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: SandboxRecord[] = [];
  for (const n of names.filter((x) => x.endsWith('.json')).sort()) {
    try {
      out.push(JSON.parse(await readFile(join(pods(stateDir), n), 'utf8')) as SandboxRecord);
    } catch {
      // removed meanwhile, or being written: skip
    }
  }
  return out;
}
