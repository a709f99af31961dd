// npm run demo: the whole mesh on the local cluster, explained.
// Starts the local cluster, installs the CRDs' chart and then the chart with the Linkerd tutorial's install command, deploys a client and a server
// (HTTP and gRPC) in a namespace with minimesh.io/inject: enabled, waits for the first meshed request,
// and prints what a newcomer wants to see. --keep leaves everything running.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { forwardToNode, isHealthy, stopCluster } from '@minimesh/local-cluster';
import { destination, fromTcpAddress } from '@minimesh/proto';
import { selectDriver } from './drivers/index.js';
import { summarizeAudit } from './src/audit.js';
import { cliMain, run } from './src/tools.js';
import {
  applyObjects,
  createMeshCerts,
  eventually,
  identityOf,
  installChart,
  kubectlJson,
  metricLines,
  parseClientLines,
  proxyMetrics,
  uninstallChart,
  waitForReadyPods,
  SERVER_HTTP_PORT,
  type MeshSetup,
  type Pod,
} from './src/mesh.js';
import { appObjects } from './src/apps.js';

const keep = process.argv.includes('--keep');
const out = (line = ''): void => void process.stdout.write(`${line}\n`);
const step = (t0: number, line: string): void =>
  out(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s] ${line}`);
const indent = (text: string, by = '    '): string =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => `${by}${l}`)
    .join('\n');

/** The container status fields kubelet fills (runtime container ID, image and its digest). */
type PodWithIds = Pod & {
  spec: { nodeName?: string };
  status: {
    initContainerStatuses?: ContainerIds[];
    containerStatuses?: ContainerIds[];
  };
};
interface ContainerIds {
  name: string;
  containerID?: string;
  image?: string;
  imageID?: string;
}

interface Endpoint {
  addr: string;
  identity: string;
  hint: string;
}

/** Asks destination (through its pod IP, as a proxy would) which endpoints serve an authority. */
async function askDestination(podIp: string, authority: string): Promise<Endpoint[]> {
  const fwd = await forwardToNode(`${podIp}:8086`);
  const client = new destination.DestinationClient(`${fwd.host}:${fwd.port}`, grpc.credentials.createInsecure());
  try {
    return await new Promise<Endpoint[]>((resolve, reject) => {
      const stream = client.get({ scheme: 'k8s', path: authority, contextToken: '{"ns":"mm-demo"}' });
      const timer = setTimeout(() => {
        stream.cancel();
        reject(new Error('no answer in 5 s'));
      }, 5000);
      stream.on('data', (u: destination.Update) => {
        if (u.update?.$case !== 'add') return;
        clearTimeout(timer);
        stream.cancel();
        resolve(
          u.update.value.addrs.map((a) => {
            const tcp = a.addr ? fromTcpAddress(a.addr) : undefined;
            const id =
              a.tlsIdentity?.strategy?.$case === 'dnsLikeIdentity' ? a.tlsIdentity.strategy.value.name : '(none)';
            return {
              addr: tcp ? `${tcp.ip}:${tcp.port}` : '?',
              identity: id,
              hint: a.protocolHint?.protocol?.$case ?? 'none',
            };
          }),
        );
      });
      stream.on('error', (err: Error) => {
        clearTimeout(timer);
        if (!/Cancelled/i.test(err.message)) reject(err);
      });
    });
  } finally {
    client.close();
    await fwd.close();
  }
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const driver = selectDriver('local');
  const clusterWasUp = await isHealthy().catch(() => false);
  out('minimesh demo: the whole mesh on a local Kubernetes cluster\n');
  step(t0, await driver.setup());
  const m: MeshSetup = {
    driver,
    cpNs: 'minimesh',
    appNs: 'mm-demo',
    release: 'minimesh',
    scopeWebhook: false,
    // viz: Prometheus scraping every proxy and the tap service, for the closing stat table.
    sets: ['viz.enabled=true'],
  };
  const certDir = mkdtempSync(join(tmpdir(), 'mm-demo-certs-'));
  try {
    await createMeshCerts(certDir);
    step(t0, `certificates: minimesh certs create --dir ${certDir} (trust anchor ca.crt, issuer issuer.crt)`);
    const cmd = await installChart(m, {
      dir: certDir,
      caCrt: join(certDir, 'ca.crt'),
      caKey: join(certDir, 'ca.key'),
      issuerCrt: join(certDir, 'issuer.crt'),
      issuerKey: join(certDir, 'issuer.key'),
    });
    const [crdsCmd = '', cpCmd = ''] = cmd.split('\n');
    step(t0, `installed the CRDs first, with their own chart: ${crdsCmd.replace(/ --kubeconfig \S+/, '')}`);
    step(
      t0,
      `installed the chart: ${cpCmd.replace(/--set-file (\S+)=\S*\/(\S+)/g, '--set-file $1=$2').replace(/ --kubeconfig \S+/, '')}`,
    );
    for (const c of ['identity', 'destination', 'injector']) {
      await waitForReadyPods(driver, m.cpNs, c, 1, 180_000, 'minimesh.io/control-plane-component');
    }
    step(t0, 'control plane ready: identity, destination, injector (each with its own proxy)');
    await applyObjects(driver, appObjects(m));
    step(t0, `deployed client and server in namespace ${m.appNs} (annotated minimesh.io/inject: enabled)`);
    const [server] = (await waitForReadyPods(driver, m.appNs, 'server', 1, 180_000)) as [Pod];
    const [client] = (await waitForReadyPods(driver, m.appNs, 'client', 1, 180_000)) as [Pod];
    const clientId = identityOf('client', m.appNs, m.cpNs);
    const metrics = await eventually('first meshed request', 120_000, async () => {
      const t = await proxyMetrics(driver, m.appNs, server.metadata.name);
      return metricLines(t, 'request_total', { direction: 'inbound', tls: 'true' }).length > 0 ? t : undefined;
    });
    const firstMeshedS = (Date.now() - t0) / 1000;
    step(
      t0,
      `first meshed request (mTLS) seen by the server's proxy: ${firstMeshedS.toFixed(1)} s after start${clusterWasUp ? ' (cluster was already running)' : ''}`,
    );

    out('\n0. The pods, as the kubelet reports them (containerd containers, images imported from scripts/images.sh)');
    for (const p of [server, client]) {
      const pod = (await kubectlJson<Pod>(driver, ['get', 'pod', '-n', m.appNs, p.metadata.name])) as PodWithIds;
      out(`    pod ${m.appNs}/${pod.metadata.name}  ip ${pod.status.podIP}  node ${pod.spec.nodeName ?? '?'}`);
      for (const st of [...(pod.status.initContainerStatuses ?? []), ...(pod.status.containerStatuses ?? [])]) {
        out(
          `      ${st.name.padEnd(15)} ${st.containerID?.slice(0, 25) ?? '(none)'}…  ${st.image}  ${st.imageID?.replace(/^.*@?(sha256:[0-9a-f]{12}).*$/, '$1') ?? ''}`,
        );
      }
    }

    out('\n1. The injected pod spec (server pod, as the API server stored it after the webhook)');
    const [init, proxy] = server.spec.initContainers ?? [];
    out(`    init container ${init?.name}  image ${init?.image}`);
    out(`      args: ${(init?.args ?? []).join(' ')}`);
    out(
      `    sidecar        ${proxy?.name}  image ${proxy?.image}  restartPolicy ${proxy?.restartPolicy ?? '(classic)'} (native sidecar: starts before the app, stops after it)`,
    );
    out(`    app containers ${server.spec.containers.map((c) => c.name).join(', ')}`);

    out(
      '\n2. The nat chains the init container minimesh-init wrote in the server pod (read with iptables-save in a netadmin debug container)',
    );
    const nat = (await driver.natRules(m.appNs, server.metadata.name))
      .split('\n')
      .filter((l) => l.includes('PROXY_INIT'));
    out(indent([...new Set(nat)].join('\n')));

    out("\n3. Identities issued (identity checked each proxy's token with a TokenReview)");
    // Only this run's events (an earlier demo used the same namespaces).
    const since = t0 - 1000;
    const events = (await driver.auditEvents()).filter(
      (e) => Date.parse(e.requestReceivedTimestamp ?? e.stageTimestamp ?? '') >= since,
    );
    const audit = summarizeAudit(events, m.cpNs, [m.appNs]);
    // TokenReviews are audited at Metadata level (no token, no reviewed user): the identities come
    // from the meshed pods' service accounts.
    const users = [
      ...new Set(
        [server, client].map((p) => `system:serviceaccount:${m.appNs}:${p.spec.serviceAccountName ?? 'default'}`),
      ),
    ].sort();
    for (const u of users) {
      const [, , ns, sa] = u.split(':');
      out(`    ${u}  →  ${identityOf(sa ?? '?', ns ?? '?', m.cpNs)}`);
    }

    out(`\n4. Endpoints destination serves for server.${m.appNs}.svc.cluster.local:${SERVER_HTTP_PORT}`);
    const dstPod = (
      await driver.kubectl([
        'get',
        'pods',
        '-n',
        m.cpNs,
        '-l',
        'minimesh.io/control-plane-component=destination',
        '-o',
        'jsonpath={.items[0].status.podIP}',
      ])
    ).stdout.trim();
    try {
      for (const e of await askDestination(dstPod, `server.${m.appNs}.svc.cluster.local:${SERVER_HTTP_PORT}`)) {
        out(`    ${e.addr}  identity ${e.identity}  protocol hint ${e.hint}`);
      }
    } catch (err) {
      out(`    (could not ask destination directly: ${(err as Error).message}); its source, the EndpointSlices:`);
      out(indent((await driver.kubectl(['get', 'endpointslices', '-n', m.appNs])).stdout));
    }

    out("\n5. Proxy metrics: the server's inbound requests are mutual TLS, from the client's identity");
    const lines = metricLines(metrics, 'request_total', { direction: 'inbound', tls: 'true' });
    out(indent(lines.slice(0, 4).join('\n')));
    if (!lines.some((l) => l.includes(`client_id="${clientId}"`)))
      out(`    (client_id ${clientId} not yet among them)`);
    const answers = parseClientLines(await driver.logs(m.appNs, client.metadata.name, 'http'));
    out(
      `    the client's log: ${answers.filter((a) => a.status === 200).length} HTTP answers 200, ${answers.filter((a) => a.error).length} errors`,
    );

    out("\n6. The API server's audit log, one line per component");
    out(
      `    destination  watch=true streams on ${audit.destinationWatches.join(', ')}; Lease renewed ${audit.leaseRenewals.length} times, every ${(audit.leaseRenewMedianMs / 1000).toFixed(1)} s`,
    );
    out(`    identity     created ${audit.tokenReviews.length} TokenReviews (${users.length} service accounts)`);
    out(
      `    injector     mutated ${audit.mutatedPods.length} pod CREATEs in ${m.appNs} (mutation.webhook.admission.k8s.io annotation)`,
    );
    out(
      `    RBAC         ${audit.denied.length === 0 ? 'no request of a minimesh service account was denied' : `${audit.denied.length} denied: ${audit.denied.map((d) => `${d.user} ${d.verb} ${d.uri}`).join('; ')}`}`,
    );
    out(`\nTime to first meshed request: ${firstMeshedS.toFixed(1)} s.`);

    out(`\n7. Golden metrics from Prometheus: minimesh viz stat deploy -n ${m.appNs}`);
    for (const c of ['prometheus', 'tap']) {
      await waitForReadyPods(driver, m.cpNs, c, 1, 180_000, 'minimesh.io/control-plane-component');
    }
    const stat = await eventually('a stat row of deploy/server with traffic', 120_000, async () => {
      const rows = JSON.parse(await vizStat(driver.kubeArgs(), m, ['-o', 'json'])) as Array<{
        name: string;
        rps: number | null;
      }>;
      return rows.some((r) => r.name === 'server' && (r.rps ?? 0) > 0) ? vizStat(driver.kubeArgs(), m, []) : undefined;
    }).catch((err: Error) => `(no traffic in Prometheus yet: ${err.message})`);
    out(indent(stat));
    out('    See it live (golden metrics, the edge graph with mTLS, live requests) in the dashboard:');
    out(
      `    npx minimesh viz dashboard -n ${m.appNs} ${driver.kubeArgs().join(' ')}${keep ? '' : '   (after npm run demo -- --keep)'}`,
    );

    if (keep) {
      out('\n--keep: everything stays up. Try:');
      out(`    ${driver.kubeconfigHint()}`);
      out(`    npm run cluster -- kubectl get pods -n ${m.appNs}`);
      out(
        `    npm run cluster -- kubectl debug -n ${m.appNs} ${server.metadata.name} -it --profile=netadmin --image=ghcr.io/minimesh/proxy-init:0.1.0 --image-pull-policy=Never -- iptables-nft-save -t nat`,
      );
      out(`    minimesh explain ${m.appNs}/${server.metadata.name} --port ${SERVER_HTTP_PORT}`);
      out('    npm run cluster -- down     # when done');
      return;
    }
    await driver.kubectl(['delete', 'namespace', m.appNs, '--wait=false']);
    await uninstallChart(m);
    if (!clusterWasUp) await stopCluster();
    out('\ncleaned up (run with --keep to leave it running).');
  } finally {
    rmSync(certDir, { recursive: true, force: true });
  }
}

/** `minimesh viz stat deploy -n <ns>`, as a user runs it; its table, or its one-line error. */
async function vizStat(kubeArgs: readonly string[], m: MeshSetup, more: readonly string[]): Promise<string> {
  const args = ['viz', 'stat', 'deploy', '-n', m.appNs, '--control-plane-namespace', m.cpNs, ...more, ...kubeArgs];
  const r = await run(process.execPath, [cliMain, ...args]);
  if (r.code !== 0) throw new Error(r.stderr.trim());
  return r.stdout;
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${(err as Error).message}\n`);
  process.exit(1);
});
