// The cluster DNS: CoreDNS as Deployment kube-system/coredns behind Service kube-system/kube-dns at
// the kubelet's clusterDNS address, as kubeadm installs it, but with no `forward` plugin: names outside
// cluster.local are not answered, so no query ever leaves the node.
import type { KubeObject } from './kube-client.js';
import { CLUSTER_DNS_IP, CLUSTER_DOMAIN, COREDNS_IMAGE } from './paths.js';

export const COREFILE = `.:53 {
    errors
    health {
        lameduck 2s
    }
    ready
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
    reload
    loadbalance
}
`;

const labels = { 'k8s-app': 'kube-dns' };

/** The objects `up` applies (server-side apply, field manager minimesh-local-cluster), in order. */
export function coreDnsObjects(): KubeObject[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: 'kube-system' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:coredns' },
      rules: [
        { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }],
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'coredns', namespace: 'kube-system' },
      data: { Corefile: COREFILE },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: 'kube-system', labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'coredns',
            priorityClassName: 'system-cluster-critical',
            dnsPolicy: 'Default',
            // Port 53 whatever uid the image runs as (a namespaced, "safe" sysctl).
            securityContext: { sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '53' }] },
            terminationGracePeriodSeconds: 5,
            containers: [
              {
                name: 'coredns',
                image: COREDNS_IMAGE,
                imagePullPolicy: 'Never',
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 53, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
                  { name: 'metrics', containerPort: 9153, protocol: 'TCP' },
                ],
                resources: { requests: { cpu: '10m', memory: '20Mi' }, limits: { memory: '170Mi' } },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] },
                  readOnlyRootFilesystem: true,
                },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
                livenessProbe: {
                  httpGet: { path: '/health', port: 8080 },
                  initialDelaySeconds: 10,
                  periodSeconds: 10,
                  failureThreshold: 5,
                },
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 1 },
              },
            ],
            volumes: [
              { name: 'config', configMap: { name: 'coredns', items: [{ key: 'Corefile', path: 'Corefile' }] } },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { ...labels, 'kubernetes.io/name': 'CoreDNS' } },
      spec: {
        selector: labels,
        clusterIP: CLUSTER_DNS_IP,
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
          { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
          { name: 'metrics', port: 9153, protocol: 'TCP', targetPort: 9153 },
        ],
      },
    },
  ];
}

/** The API path of an object (for server-side apply). */
export function objectPath(o: KubeObject): string {
  const plural: Record<string, string> = {
    ServiceAccount: 'serviceaccounts',
    ClusterRole: 'clusterroles',
    ClusterRoleBinding: 'clusterrolebindings',
    ConfigMap: 'configmaps',
    Deployment: 'deployments',
    Service: 'services',
  };
  const resource = plural[o.kind as string];
  if (!resource) throw new Error(`objectPath: unknown kind ${o.kind}`);
  const group = String(o.apiVersion).includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  const ns = o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : '';
  return `${group}${ns}/${resource}/${o.metadata.name}`;
}
