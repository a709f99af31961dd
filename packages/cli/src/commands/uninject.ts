// minimesh uninject [FILE|-]: removes what `minimesh inject` (or the webhook) added.
import { uninjectPod, type PodLike } from '@minimesh/injector';
import { parseFlags } from '@minimesh/runtime';
import type { CommandIO } from '../io.js';
import { readInput } from '../io.js';
import {
  TEMPLATE_PATHS,
  describeObject,
  formatManifests,
  getAt,
  mapObjects,
  parseManifests,
  type KubeObject,
} from '../manifest.js';

const info = {
  name: 'minimesh uninject',
  summary: 'remove the minimesh proxy, proxy-init and their volumes, annotations and labels from a YAML manifest',
  usage: 'minimesh uninject [FILE|-]   (reads stdin when FILE is "-" or absent; writes stdout)',
};

export function uninjectObject(obj: KubeObject, lines: string[]): KubeObject {
  const path = TEMPLATE_PATHS[obj.kind ?? ''];
  if (!path) return obj;
  const template = getAt(obj, path);
  if (typeof template !== 'object' || template === null) return obj;
  const { pod, changed } = uninjectPod(template as PodLike);
  if (!changed) {
    lines.push(`${describeObject(obj)} was not injected`);
    return obj;
  }
  lines.push(`${describeObject(obj)} uninjected`);
  if (path.length === 0) return pod as KubeObject;
  const copy = structuredClone(obj);
  const parent = getAt(copy, path.slice(0, -1)) as Record<string, unknown>;
  parent[path[path.length - 1] as string] = pod;
  return copy;
}

export async function uninjectCommand(argv: string[], io: CommandIO): Promise<number> {
  const parsed = parseFlags(info, {}, argv);
  if ('help' in parsed) {
    io.stdout.write(parsed.help);
    return 0;
  }
  const { text, source } = await readInput(parsed.positionals, io, 'minimesh uninject');
  const lines: string[] = [];
  const out = mapObjects(parseManifests(text, source), (o) => uninjectObject(o, lines));
  io.stdout.write(formatManifests(out));
  if (lines.length > 0) io.stderr.write(`${lines.join('\n')}\n`);
  return 0;
}
