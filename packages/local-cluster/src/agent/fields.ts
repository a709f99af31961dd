// Downward API field paths (env valueFrom.fieldRef and downwardAPI volume items).
import type { KubeObject } from '../kube-client.js';

function formatMap(m: Record<string, string> | undefined): string {
  return Object.entries(m ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join('\n');
}

/** The value of a fieldRef path for a pod, or undefined when the path is not supported. */
export function fieldValue(pod: KubeObject, fieldPath: string, podIp: string): string | undefined {
  const sub = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (sub) return (pod.metadata?.[sub[1]!] ?? {})[sub[2]!] ?? '';
  switch (fieldPath) {
    case 'metadata.name':
      return pod.metadata.name;
    case 'metadata.namespace':
      return pod.metadata.namespace;
    case 'metadata.uid':
      return pod.metadata.uid;
    case 'metadata.labels':
      return formatMap(pod.metadata.labels);
    case 'metadata.annotations':
      return formatMap(pod.metadata.annotations);
    case 'spec.serviceAccountName':
      return pod.spec.serviceAccountName ?? 'default';
    case 'spec.nodeName':
      return pod.spec.nodeName ?? '';
    case 'status.podIP':
    case 'status.podIPs':
      return podIp;
    case 'status.hostIP':
    case 'status.hostIPs':
      return '10.23.0.1';
    default:
      return undefined;
  }
}
