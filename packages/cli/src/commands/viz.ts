// minimesh viz (stat, edges, top, tap, dashboard) and minimesh diagnostics (proxy-metrics): the
// commands live in @minimesh/viz; this wires them to the kubeconfig and client of @minimesh/kube.
import { MINIMESH_VERSION } from '@minimesh/config';
import { createKubeClient, loadKubeConfig } from '@minimesh/kube';
import { diagnosticsCommand as diagnostics, vizCommand as viz, type Connection, type VizEnv } from '@minimesh/viz';
import type { Command } from '../io.js';
import { LOCAL_CLUSTER_KUBECONFIG } from '../kube.js';

async function connect(opts: { kubeconfig: string; context: string }): Promise<Connection> {
  const config = await loadKubeConfig({
    path: opts.kubeconfig || undefined,
    context: opts.context || undefined,
    fallbacks: [LOCAL_CLUSTER_KUBECONFIG],
  });
  const client = createKubeClient(config, { userAgent: `minimesh-cli/${MINIMESH_VERSION}` });
  return { kube: client, server: config.server, namespace: config.namespace, close: () => client.close() };
}

const env: VizEnv = { connect };

export const vizCommand: Command = (argv, io) => viz(argv, io, env);
export const diagnosticsCommand: Command = (argv, io) => diagnostics(argv, io, env);
