// Small readers for untrusted JSON (objects from the API server or a fixture): each names the field
// path in its error, so a malformed resource is reported as "<kind> <ns>/<name>: spec.port: ...".
export type Json = Record<string, unknown>;

export class FieldError extends Error {
  constructor(
    readonly path: string,
    readonly expected: string,
    readonly value: unknown,
  ) {
    super(`${path}: expected ${expected}, got ${JSON.stringify(value) ?? 'nothing'}`);
    this.name = 'FieldError';
  }
}

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function obj(v: unknown, path: string): Json {
  if (!isObject(v)) throw new FieldError(path, 'an object', v);
  return v;
}

export function optObj(v: unknown, path: string): Json | undefined {
  return v === undefined || v === null ? undefined : obj(v, path);
}

export function arr(v: unknown, path: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new FieldError(path, 'a list', v);
  return v;
}

export function str(v: unknown, path: string): string {
  if (typeof v !== 'string' || v === '') throw new FieldError(path, 'a non-empty string', v);
  return v;
}

export function optStr(v: unknown, path: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new FieldError(path, 'a string', v);
  return v;
}

export function int(v: unknown, path: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    throw new FieldError(path, `a whole number from ${min} to ${max}`, v);
  return v;
}

export function optInt(v: unknown, path: string, min: number, max: number): number | undefined {
  return v === undefined || v === null ? undefined : int(v, path, min, max);
}

export function stringMap(v: unknown, path: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  const o = obj(v, path);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(o)) {
    if (typeof val !== 'string') throw new FieldError(`${path}.${k}`, 'a string', val);
    out[k] = val;
  }
  return out;
}

/** The identity of an object: kind, namespace, name, and what the index keeps of metadata. */
export interface ObjectMeta {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** RFC 3339 creation time ("" when absent, e.g. in fixtures): orders Servers and routes. */
  createdAt: string;
  /** metadata.generation (routes' status conditions carry it as observedGeneration). */
  generation?: number;
  /** metadata.resourceVersion (the route-status writer's precondition). */
  resourceVersion?: string;
}

export function objectMeta(o: unknown, kind: string): ObjectMeta {
  const root = obj(o, kind);
  const m = obj(root.metadata, 'metadata');
  return {
    namespace: str(m.namespace, 'metadata.namespace'),
    name: str(m.name, 'metadata.name'),
    labels: stringMap(m.labels, 'metadata.labels'),
    annotations: stringMap(m.annotations, 'metadata.annotations'),
    createdAt: typeof m.creationTimestamp === 'string' ? m.creationTimestamp : '',
    ...(typeof m.generation === 'number' ? { generation: m.generation } : {}),
    ...(typeof m.resourceVersion === 'string' ? { resourceVersion: m.resourceVersion } : {}),
  };
}

/** "<kind> <namespace>/<name>" for messages, whatever shape the object has. */
export function describeObject(o: unknown, kind: string): string {
  const m = isObject(o) && isObject(o.metadata) ? o.metadata : {};
  const ns = typeof m.namespace === 'string' ? m.namespace : '?';
  const name = typeof m.name === 'string' ? m.name : '?';
  return `${kind} ${ns}/${name}`;
}

/** Orders by creation time, then name (Linkerd's and the Gateway API's precedence rule). */
export function byCreationThenName(
  a: { createdAt: string; name: string },
  b: { createdAt: string; name: string },
): number {
  if (a.createdAt !== b.createdAt) {
    if (!a.createdAt) return 1;
    if (!b.createdAt) return -1;
    return a.createdAt < b.createdAt ? -1 : 1;
  }
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
