// The node's CNI configuration, as the runtime reads it, and our place at the end of its chain.
// Pure text in, text out: the file is rewritten with its own indentation and final newline, so
// inserting and then removing our entry gives back the bytes the cluster's CNI wrote.
import { isDeepStrictEqual } from 'node:util';
import { PLUGIN_TYPE } from '../plugin/spec.js';

/** The extensions libcni reads, in the order it picks from (file names sorted, first one wins). */
export const CONF_EXTENSIONS = ['.conf', '.conflist', '.json'] as const;

/** The file the runtime uses: the first, in name order, with a CNI configuration extension. */
export function pickConfFile(names: readonly string[]): string | undefined {
  return [...names]
    .filter((n) => !n.startsWith('.') && CONF_EXTENSIONS.some((e) => n.endsWith(e)))
    .sort()
    .at(0);
}

export interface PluginEntry {
  type: typeof PLUGIN_TYPE;
  log_level: string;
  state_dir: string;
  kubernetes: { kubeconfig: string };
}

export class ConflistError extends Error {}

interface Parsed {
  conf: Record<string, unknown> & { plugins: Record<string, unknown>[] };
  indent: string | number;
  newline: boolean;
}

function parse(file: string, text: string): Parsed {
  let conf: unknown;
  try {
    conf = JSON.parse(text);
  } catch (err) {
    throw new ConflistError(`${file} is not JSON (${(err as Error).message}); minimesh-cni waits for a valid one`);
  }
  if (typeof conf !== 'object' || conf === null || !Array.isArray((conf as { plugins?: unknown }).plugins))
    throw new ConflistError(
      `${file} is a single-plugin configuration (no "plugins" list): minimesh-cni chains itself only into a conflist`,
    );
  const m = /\n([ \t]+)"/.exec(text);
  return {
    conf: conf as Parsed['conf'],
    indent: m ? (m[1] as string) : 0,
    newline: text.endsWith('\n'),
  };
}

function render(p: Parsed): string {
  return `${JSON.stringify(p.conf, null, p.indent)}${p.newline ? '\n' : ''}`;
}

const ours = (plugin: Record<string, unknown>) => plugin.type === PLUGIN_TYPE;

/** Whether the conflist ends with exactly our entry (and has it once). */
export function isChained(file: string, text: string, entry: PluginEntry): boolean {
  const { conf } = parse(file, text);
  const found = conf.plugins.filter(ours);
  return found.length === 1 && isDeepStrictEqual(conf.plugins.at(-1), entry);
}

/** Our entry last in the chain (moved or refreshed if it is elsewhere or different). */
export function insertPlugin(file: string, text: string, entry: PluginEntry): { text: string; changed: boolean } {
  if (isChained(file, text, entry)) return { text, changed: false };
  const p = parse(file, text);
  p.conf.plugins = [...p.conf.plugins.filter((x) => !ours(x)), { ...entry }];
  return { text: render(p), changed: true };
}

/** The conflist without our entry. */
export function removePlugin(file: string, text: string): { text: string; changed: boolean } {
  const p = parse(file, text);
  if (!p.conf.plugins.some(ours)) return { text, changed: false };
  p.conf.plugins = p.conf.plugins.filter((x) => !ours(x));
  return { text: render(p), changed: true };
}
