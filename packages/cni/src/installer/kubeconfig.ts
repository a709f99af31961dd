// The kubeconfig the plugin reads pods with: the installer's service-account token (RBAC: get pods,
// nothing else), the cluster CA, and the API server's address. JSON, which every kubeconfig reader
// accepts as YAML.
export function renderPluginKubeconfig(opts: { server: string; caPem: string; token: string }): string {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'local',
        cluster: { server: opts.server, 'certificate-authority-data': Buffer.from(opts.caPem).toString('base64') },
      },
    ],
    users: [{ name: 'minimesh-cni', user: { token: opts.token.trim() } }],
    contexts: [{ name: 'minimesh-cni', context: { cluster: 'local', user: 'minimesh-cni' } }],
    'current-context': 'minimesh-cni',
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}
