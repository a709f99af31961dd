// The workload a proxy names in PortSpec.workload and TrafficSpec.source_workload: JSON
// {"ns":"<namespace>","pod":"<name>"} or {"ns","external_workload"}, or the older "<namespace>:<pod>".
import { PolicyError } from '../errors.js';
import type { WorkloadKind } from '../index/policy-index.js';

export interface WorkloadRef {
  kind: WorkloadKind;
  namespace: string;
  name: string;
}

export function parseWorkloadRef(text: string): WorkloadRef {
  const bad = (why: string) =>
    new PolicyError(
      'MINIMESH_POLICY_INVALID_WORKLOAD',
      `workload ${JSON.stringify(text)}: ${why}; expected {"ns":"<namespace>","pod":"<name>"}, {"ns":"<namespace>","external_workload":"<name>"} or <namespace>:<pod>`,
    );
  if (text.trimStart().startsWith('{')) {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw bad('not valid JSON');
    }
    const o = v as { ns?: unknown; pod?: unknown; external_workload?: unknown };
    if (typeof o.ns !== 'string' || o.ns === '') throw bad('"ns" is missing');
    if (typeof o.pod === 'string' && o.pod !== '') return { kind: 'pod', namespace: o.ns, name: o.pod };
    if (typeof o.external_workload === 'string' && o.external_workload !== '')
      return { kind: 'externalworkload', namespace: o.ns, name: o.external_workload };
    throw bad('neither "pod" nor "external_workload" is set');
  }
  const i = text.indexOf(':');
  if (i <= 0 || i === text.length - 1) throw bad('not a known form');
  return { kind: 'pod', namespace: text.slice(0, i), name: text.slice(i + 1) };
}
