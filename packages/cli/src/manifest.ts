// Multi-document YAML manifests: find each workload's pod template, transform it, write it back.
import { parseAllDocuments, stringify } from 'yaml';
import { UsageError } from '@minimesh/runtime';

/** Where each kind keeps its pod template (JSON pointer tokens); a Pod is its own template. */
export const TEMPLATE_PATHS: Readonly<Record<string, readonly string[]>> = {
  Pod: [],
  Deployment: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

export type KubeObject = { kind?: string; metadata?: { name?: string; namespace?: string }; [key: string]: unknown };

export function parseManifests(text: string, source: string): unknown[] {
  const docs = parseAllDocuments(text);
  const out: unknown[] = [];
  for (const [i, doc] of docs.entries()) {
    if (doc.errors.length > 0) {
      throw new UsageError(
        `${source}: document ${i + 1} is not valid YAML: ${(doc.errors[0]?.message ?? 'parse error').split('\n')[0]}`,
      );
    }
    const value: unknown = doc.toJS();
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

export function formatManifests(objects: unknown[]): string {
  return objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
}

export function describeObject(o: KubeObject): string {
  return `${(o.kind ?? 'object').toLowerCase()} "${o.metadata?.name ?? '(unnamed)'}"`;
}

export function getAt(obj: unknown, path: readonly string[]): unknown {
  let cur: unknown = obj;
  for (const key of path) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** Applies fn to every object, descending into `kind: List` items. */
export function mapObjects(objects: unknown[], fn: (o: KubeObject) => KubeObject): unknown[] {
  return objects.map((o) => {
    if (typeof o !== 'object' || o === null) return o;
    const obj = o as KubeObject;
    if (obj.kind === 'List' && Array.isArray(obj.items))
      return { ...obj, items: mapObjects(obj.items as unknown[], fn) };
    return fn(obj);
  });
}
