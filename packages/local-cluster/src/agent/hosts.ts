// /etc/hosts for pods: the pod itself, hostAliases, and every Service's ClusterIP under
// <svc>.<ns>.svc.cluster.local, <svc>.<ns>.svc, <svc>.<ns> (and <svc> in the pod's own namespace).
// There is no cluster DNS; the node agent rewrites these files whenever Services change.
import type { KubeObject } from '../kube-client.js';

export function renderHosts(podIp: string, pod: KubeObject, services: Iterable<KubeObject>): string {
  const ns = pod.metadata.namespace;
  const lines = [
    '# written by the minimesh local cluster node agent',
    '127.0.0.1\tlocalhost',
    '::1\tlocalhost ip6-localhost ip6-loopback',
  ];
  const hostname = pod.spec.hostname ?? pod.metadata.name;
  const fqdn = pod.spec.subdomain ? `${hostname}.${pod.spec.subdomain}.${ns}.svc.cluster.local ` : '';
  lines.push(`${podIp}\t${fqdn}${hostname}`);
  for (const alias of (pod.spec.hostAliases ?? []) as KubeObject[])
    lines.push(`${alias.ip}\t${(alias.hostnames ?? []).join(' ')}`);
  const sorted = [...services].sort((a, b) =>
    `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
  );
  for (const svc of sorted) {
    const ip = svc.spec?.clusterIP;
    if (!ip || ip === 'None') continue;
    const { name, namespace } = svc.metadata;
    const names = [`${name}.${namespace}.svc.cluster.local`, `${name}.${namespace}.svc`, `${name}.${namespace}`];
    if (namespace === ns) names.push(name);
    lines.push(`${ip}\t${names.join(' ')}`);
  }
  return `${lines.join('\n')}\n`;
}
