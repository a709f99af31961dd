// The installer's work on one node, through the host directories the DaemonSet mounts: the plugin
// binary in the CNI bin dir, its kubeconfig in the CNI conf dir, our entry at the end of the conflist
// the runtime reads. sync() makes it so (and is called again whenever the conf dir changes, so a
// cluster CNI that rewrites its file gets us back); uninstall() takes all of it away again.
import { createReadStream } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Logger } from '@minimesh/runtime';
import { PLUGIN_TYPE } from '../plugin/spec.js';
import {
  ConflistError,
  CONF_EXTENSIONS,
  insertPlugin,
  isChained,
  pickConfFile,
  removePlugin,
  type PluginEntry,
} from './conflist.js';
import { renderPluginKubeconfig } from './kubeconfig.js';

export const KUBECONFIG_NAME = 'minimesh-cni-kubeconfig';

export interface InstallerOptions {
  /** Where the host's file system is mounted in the installer's container ('' when run on the host). */
  hostRoot: string;
  /** Host paths. */
  binDir: string;
  confDir: string;
  stateDir: string;
  /** The plugin executable to install (in the installer's image). */
  pluginSource: string;
  pluginLogLevel: string;
  /** https://host:port of the API server, as the node reaches it. */
  apiServer: string;
  /** The installer's service-account token and CA (the plugin gets the same identity: get pods). */
  serviceAccountDir: string;
  nodeName: string | undefined;
}

export interface InstallerStatus {
  node: string | undefined;
  ready: boolean;
  /** Why not ready. */
  reason: string | undefined;
  /** Host paths. */
  confFile: string | undefined;
  chained: boolean;
  plugin: { path: string; bytes: number | undefined; sha256: string | undefined };
  kubeconfig: string;
  stateDir: string;
  syncedAt: string | undefined;
}

export interface Installer {
  sync(): Promise<string[]>;
  uninstall(): Promise<string[]>;
  status(): InstallerStatus;
  /** Where the conf dir is in this process's view (to watch it). */
  readonly confDirLocal: string;
  readonly stateDirLocal: string;
  entry: PluginEntry;
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const exists = (p: string) =>
  stat(p).then(
    (s) => s,
    () => undefined,
  );

/** Writes through a dot-file in the same directory and a rename: readers see the old file or the new one. */
async function writeAtomic(path: string, text: string, mode: number): Promise<void> {
  const dir = path.slice(0, path.lastIndexOf('/'));
  const tmp = join(dir, `.minimesh-cni-${process.pid}.tmp`);
  await writeFile(tmp, text, { mode });
  await chmod(tmp, mode);
  await rename(tmp, path);
}

export function createInstaller(opts: InstallerOptions, logger: Logger): Installer {
  const local = (hostPath: string) => (opts.hostRoot ? join(opts.hostRoot, hostPath) : hostPath);
  const binDir = local(opts.binDir);
  const confDir = local(opts.confDir);
  const pluginPath = join(binDir, PLUGIN_TYPE);
  const kubeconfigPath = join(confDir, KUBECONFIG_NAME);
  const entry: PluginEntry = {
    type: PLUGIN_TYPE,
    log_level: opts.pluginLogLevel,
    state_dir: opts.stateDir,
    kubernetes: { kubeconfig: join(opts.confDir, KUBECONFIG_NAME) },
  };
  let sourceSha: string | undefined;
  let installed: { size: number; mtimeMs: number } | undefined;
  const status: InstallerStatus = {
    node: opts.nodeName,
    ready: false,
    reason: 'not synced yet',
    confFile: undefined,
    chained: false,
    plugin: { path: join(opts.binDir, PLUGIN_TYPE), bytes: undefined, sha256: undefined },
    kubeconfig: entry.kubernetes.kubeconfig,
    stateDir: opts.stateDir,
    syncedAt: undefined,
  };

  async function ensureBinary(changes: string[]): Promise<void> {
    sourceSha ??= await sha256File(opts.pluginSource);
    const now = await exists(pluginPath);
    if (now && installed && now.size === installed.size && now.mtimeMs === installed.mtimeMs) return;
    if (now && (await sha256File(pluginPath)) === sourceSha) {
      installed = { size: now.size, mtimeMs: now.mtimeMs };
    } else {
      await mkdir(binDir, { recursive: true });
      const tmp = join(binDir, `.${PLUGIN_TYPE}-${process.pid}.tmp`);
      await copyFile(opts.pluginSource, tmp);
      await chmod(tmp, 0o755);
      await rename(tmp, pluginPath);
      const s = await stat(pluginPath);
      installed = { size: s.size, mtimeMs: s.mtimeMs };
      changes.push(`installed ${status.plugin.path} (${(s.size / 1e6).toFixed(1)} MB)`);
    }
    status.plugin.bytes = installed.size;
    status.plugin.sha256 = sourceSha;
  }

  async function ensureKubeconfig(changes: string[]): Promise<void> {
    const [token, caPem] = await Promise.all([
      readFile(join(opts.serviceAccountDir, 'token'), 'utf8'),
      readFile(join(opts.serviceAccountDir, 'ca.crt'), 'utf8'),
    ]);
    const text = renderPluginKubeconfig({ server: opts.apiServer, caPem, token });
    const now = await readFile(kubeconfigPath, 'utf8').catch(() => undefined);
    if (now === text) return;
    await mkdir(confDir, { recursive: true });
    await writeAtomic(kubeconfigPath, text, 0o600);
    changes.push(now === undefined ? `wrote ${status.kubeconfig}` : `refreshed ${status.kubeconfig} (token rotated)`);
  }

  async function ensureChained(changes: string[]): Promise<void> {
    const names = await readdir(confDir).catch(() => [] as string[]);
    const file = pickConfFile(names);
    status.confFile = file ? join(opts.confDir, file) : undefined;
    if (!file) {
      status.chained = false;
      throw new ConflistError(
        `no CNI configuration in ${opts.confDir} yet (files ending in ${CONF_EXTENSIONS.join(', ')}): minimesh-cni chains itself after the cluster's CNI once it has written one`,
      );
    }
    const path = join(confDir, file);
    const text = await readFile(path, 'utf8');
    const next = insertPlugin(status.confFile as string, text, entry);
    if (next.changed) {
      const mode = ((await exists(path))?.mode ?? 0o644) & 0o777;
      // The cluster's CNI may be rewriting it right now: write only over what we read.
      if ((await readFile(path, 'utf8')) !== text)
        throw new ConflistError(`${status.confFile} changed while being read; retrying`);
      await writeAtomic(path, next.text, mode);
      changes.push(`chained ${PLUGIN_TYPE} into ${status.confFile}`);
    }
    status.chained = true;
  }

  return {
    confDirLocal: confDir,
    stateDirLocal: local(opts.stateDir),
    entry,
    status: () => ({ ...status, plugin: { ...status.plugin } }),
    async sync() {
      const changes: string[] = [];
      try {
        await ensureBinary(changes);
        await ensureKubeconfig(changes);
        await ensureChained(changes);
        await mkdir(local(opts.stateDir), { recursive: true });
        status.ready = true;
        status.reason = undefined;
      } catch (err) {
        status.ready = false;
        const message = (err as Error).message;
        if (status.reason !== message) logger.warn(`not ready: ${message}`);
        status.reason = message;
      }
      status.syncedAt = new Date().toISOString();
      for (const c of changes) logger.info(c);
      return changes;
    },
    async uninstall() {
      const changes: string[] = [];
      // First out of every conflist (new sandboxes stop calling us), then the files.
      for (const name of await readdir(confDir).catch(() => [] as string[])) {
        if (!CONF_EXTENSIONS.some((e) => name.endsWith(e)) || name.startsWith('.')) continue;
        const path = join(confDir, name);
        try {
          const text = await readFile(path, 'utf8');
          if (!text.includes(PLUGIN_TYPE)) continue;
          const next = removePlugin(join(opts.confDir, name), text);
          if (next.changed) {
            const mode = ((await exists(path))?.mode ?? 0o644) & 0o777;
            await writeAtomic(path, next.text, mode);
            changes.push(`removed ${PLUGIN_TYPE} from ${join(opts.confDir, name)}`);
          }
        } catch (err) {
          logger.warn(`uninstall: ${join(opts.confDir, name)}: ${(err as Error).message}`);
        }
      }
      if (await exists(kubeconfigPath)) {
        await rm(kubeconfigPath, { force: true });
        changes.push(`removed ${status.kubeconfig}`);
      }
      if (await exists(pluginPath)) {
        await rm(pluginPath, { force: true });
        changes.push(`removed ${status.plugin.path}`);
      }
      await rm(join(local(opts.stateDir), 'pods'), { recursive: true, force: true });
      status.ready = false;
      status.chained = false;
      status.reason = 'uninstalled';
      for (const c of changes) logger.info(c);
      return changes;
    },
  };
}

/** For `minimesh check`: whether this conflist text has our entry last (exported for tests). */
export { isChained };
