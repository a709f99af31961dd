// minimesh-cni-installer: the DaemonSet's program. It installs the plugin on its node, keeps it
// chained (on every change in the CNI conf dir, and every --resync), serves /ready (installed and
// chained), /status (what is where, for `minimesh check`) and /pods (what the plugin wrote into each
// sandbox, for `minimesh explain`), and on SIGTERM (uninstall, or the DaemonSet's rollout) takes the
// plugin out of the chain and off the node.
import { watch, type FSWatcher } from 'node:fs';
import { MINIMESH_VERSION, parseDuration } from '@minimesh/config';
import { SERVICE_ACCOUNT_DIR } from '@minimesh/kube';
import { defineProgram, startAdminServer, UsageError, type FlagSpecs, type Program } from '@minimesh/runtime';
import { listRecords } from '../plugin/sandbox-record.js';
import { createInstaller, type InstallerOptions } from './installer.js';

export const INSTALLER_FLAGS = {
  'host-root': {
    type: 'string',
    default: '/host',
    description: "where the host's directories are mounted in this container ('' when run on the host itself)",
  },
  'cni-bin-dir': { type: 'string', default: '/opt/cni/bin', description: "the node's CNI bin dir (host path)" },
  'cni-conf-dir': { type: 'string', default: '/etc/cni/net.d', description: "the node's CNI conf dir (host path)" },
  'state-dir': {
    type: 'string',
    default: '/var/run/minimesh-cni',
    description: 'where the plugin records what it wrote per sandbox (host path)',
  },
  plugin: {
    type: 'string',
    default: '/app/minimesh-cni',
    description: 'the plugin executable to install (a path in this container)',
  },
  'plugin-log-level': { type: 'string', default: 'info', description: "the plugin's log level (the runtime's log)" },
  'api-server': {
    type: 'string',
    default: '',
    description:
      'https://host:port the plugin reads pods from (default: $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)',
  },
  'service-account-dir': {
    type: 'string',
    default: SERVICE_ACCOUNT_DIR,
    description: 'the token and ca.crt the plugin gets',
  },
  resync: { type: 'string', default: '10s', description: 'how often to check everything is still in place' },
  'admin-addr': { type: 'string', default: '0.0.0.0:9997', description: '/live, /ready, /metrics, /status, /pods' },
  'node-name': { type: 'string', default: '', description: 'this node (default: $NODE_NAME)' },
} as const satisfies FlagSpecs;

export interface InstallerConfig extends InstallerOptions {
  resyncMs: number;
  adminAddr: string;
}

function absolute(flag: string, value: string): string {
  if (!value.startsWith('/')) throw new UsageError(`--${flag}: "${value}" is not valid: expected an absolute path`);
  return value.replace(/\/+$/, '') || '/';
}

export function installerProgram(): Program {
  return defineProgram({
    name: 'minimesh-cni-installer',
    summary:
      "installs minimesh-cni on this node: the plugin in the CNI bin dir, chained at the end of the node's conflist",
    usage: 'minimesh-cni-installer [--cni-bin-dir /opt/cni/bin] [--cni-conf-dir /etc/cni/net.d] [--host-root /host]',
    version: MINIMESH_VERSION,
    logName: 'cni-installer',
    flags: INSTALLER_FLAGS,
    configure: ({ flags, env }): InstallerConfig => {
      let apiServer = flags['api-server'].trim();
      if (apiServer === '') {
        const host = env.KUBERNETES_SERVICE_HOST ?? '';
        if (host === '')
          throw new UsageError(
            '--api-server is not set and neither is $KUBERNETES_SERVICE_HOST (run in a pod, or pass it)',
          );
        apiServer = `https://${host.includes(':') ? `[${host}]` : host}:${env.KUBERNETES_SERVICE_PORT ?? '443'}`;
      }
      if (!/^https?:\/\/[^/]+$/.test(apiServer))
        throw new UsageError(`--api-server: "${apiServer}" is not valid: expected https://host:port`);
      const hostRoot = flags['host-root'].trim();
      return {
        hostRoot: hostRoot === '' ? '' : absolute('host-root', hostRoot),
        binDir: absolute('cni-bin-dir', flags['cni-bin-dir']),
        confDir: absolute('cni-conf-dir', flags['cni-conf-dir']),
        stateDir: absolute('state-dir', flags['state-dir']),
        pluginSource: flags.plugin,
        pluginLogLevel: flags['plugin-log-level'],
        apiServer,
        serviceAccountDir: flags['service-account-dir'],
        nodeName: flags['node-name'] || env.NODE_NAME || undefined,
        resyncMs: parseDuration('--resync', flags.resync),
        adminAddr: flags['admin-addr'],
      };
    },
    async run({ config, logger }) {
      const installer = createInstaller(config, logger);
      let syncing: Promise<unknown> = Promise.resolve();
      let again = false;
      let closed = false;
      let retry: NodeJS.Timeout | undefined;
      // One sync at a time; a change during a sync asks for one more. A sync that could not finish
      // (a conflist caught half-written, no conflist yet) is tried again in a second, not at --resync.
      const sync = () => {
        if (closed) return;
        if (again) return;
        again = true;
        syncing = syncing.then(async () => {
          again = false;
          if (closed) return;
          await installer.sync();
          clearTimeout(retry);
          if (!installer.status().ready && !closed) retry = setTimeout(sync, Math.min(1000, config.resyncMs));
        });
      };
      sync();
      await syncing;
      let watcher: FSWatcher | undefined;
      try {
        watcher = watch(installer.confDirLocal, () => sync());
        watcher.on('error', (err) =>
          logger.warn({ err }, 'watching the CNI conf dir failed; resyncing on the timer only'),
        );
      } catch (err) {
        logger.warn({ err }, `cannot watch ${config.confDir}; resyncing every ${config.resyncMs} ms only`);
      }
      const timer = setInterval(sync, config.resyncMs);
      const admin = await startAdminServer({
        addr: config.adminAddr,
        logger,
        ready: () => {
          const s = installer.status();
          return s.ready || (s.reason ?? 'not ready');
        },
        routes: {
          '/status': (_req, res) => {
            res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify(installer.status())}\n`);
          },
          '/pods': async (req, res) => {
            const q = new URL(req.url ?? '/', 'http://x').searchParams;
            const records = (await listRecords(installer.stateDirLocal)).filter(
              (r) =>
                (!q.get('namespace') || r.namespace === q.get('namespace')) &&
                (!q.get('name') || r.name === q.get('name')) &&
                (!q.get('uid') || r.uid === q.get('uid')),
            );
            res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify({ items: records })}\n`);
          },
        },
      });
      logger.info(
        { node: config.nodeName, binDir: config.binDir, confDir: config.confDir },
        `minimesh-cni installer ${MINIMESH_VERSION} running`,
      );
      return {
        async close(reason) {
          closed = true;
          clearInterval(timer);
          clearTimeout(retry);
          watcher?.close();
          await syncing;
          logger.info(`${reason}: removing minimesh-cni from this node`);
          await installer.uninstall();
          await admin.close();
        },
      };
    },
  });
}
