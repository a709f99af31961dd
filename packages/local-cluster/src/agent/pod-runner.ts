// One pod on the node: its network, volumes, init containers in order (native sidecars start and
// must pass their startup probe before the next one), then its containers; probes; restarts per
// restartPolicy; graceful termination; and its status, written through the status subresource.
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeClient, KubeObject } from '../kube-client.js';
import { KubeApiError } from '../kube-client.js';
import { podNetnsName } from '../forward.js';
import { NODE_IP, repoRoot } from '../paths.js';
import { resolveImage } from '../images.js';
import { killGroup, pidAlive } from '../procs.js';
import { containerEnv, launchContainer } from './launch.js';
import type { AgentLog } from './log.js';
import { createPodNetwork, deletePodNetwork, type IpAllocator } from './network.js';
import { runProbe } from './probes.js';
import { isMountPoint, materializeVolumes, renewTokens, VolumeNotReadyError, type PodVolumes } from './volumes.js';
import { execFileSync } from 'node:child_process';

type Kind = 'init' | 'sidecar' | 'main';
type State =
  | { waiting: { reason: string; message?: string } }
  | { running: { startedAt: string } }
  | {
      terminated: {
        exitCode: number;
        signal?: number;
        reason: string;
        message?: string;
        startedAt?: string;
        finishedAt: string;
      };
    };

interface Container {
  spec: KubeObject;
  kind: Kind;
  argv: string[];
  proc?: ChildProcess;
  pid?: number;
  state: State;
  lastState?: State;
  restartCount: number;
  started: boolean;
  ready: boolean;
  timers: NodeJS.Timeout[];
  /** Resolves when the current process exits (with its exit code). */
  exited?: Promise<number>;
  killing: boolean;
}

export interface PodRunnerDeps {
  client: KubeClient;
  log: AgentLog;
  ips: IpAllocator;
  podsDir: string;
  createdMountpointsFile: string;
  renderHosts(podIp: string, pod: KubeObject): string;
}

const now = () => new Date().toISOString();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MAX_RESTARTS = 50;

export class PodRunner {
  readonly uid: string;
  readonly netns: string;
  readonly dir: string;
  pod: KubeObject;
  podIp = '';
  private readonly containers = new Map<string, Container>();
  private phase = 'Pending';
  private reason?: string;
  private message?: string;
  private initialized = false;
  private stopping = false;
  private volumes?: PodVolumes;
  private tokenTimer?: NodeJS.Timeout;
  private statusChain: Promise<void> = Promise.resolve();
  private statusPending = false;
  private readonly startTime = now();
  private readonly transitions = new Map<string, { ok: boolean; at: string }>();
  private readonly log: AgentLog;

  constructor(
    pod: KubeObject,
    private readonly deps: PodRunnerDeps,
  ) {
    this.pod = pod;
    this.uid = pod.metadata.uid;
    this.netns = podNetnsName(this.uid);
    this.dir = join(deps.podsDir, this.uid);
    this.log = deps.log.child({ pod: `${pod.metadata.namespace}/${pod.metadata.name}` });
    const add = (spec: KubeObject, kind: Kind) =>
      this.containers.set(spec.name, {
        spec,
        kind,
        argv: [],
        state: { waiting: { reason: 'PodInitializing' } },
        restartCount: 0,
        started: false,
        ready: false,
        timers: [],
        killing: false,
      });
    for (const c of pod.spec.initContainers ?? []) add(c, c.restartPolicy === 'Always' ? 'sidecar' : 'init');
    for (const c of pod.spec.containers ?? []) add(c, 'main');
    for (const c of this.containers.values())
      if (c.kind === 'main') c.state = { waiting: { reason: 'ContainerCreating' } };
  }

  get hostsFile(): string {
    return join(this.dir, 'hosts');
  }

  /** Rewrites /etc/hosts in place (bind mounts keep pointing at the same inode). */
  refreshHosts(): void {
    if (!this.podIp || this.stopping) return;
    try {
      mkdirSync(this.dir, { recursive: true });
      writeFileSync(this.hostsFile, this.deps.renderHosts(this.podIp, this.pod));
    } catch {
      /* pod being torn down */
    }
  }

  /** Runs the pod until it finishes or is stopped. Never throws. */
  async run(): Promise<void> {
    try {
      await this.runInner();
    } catch (err) {
      if (this.stopping) return;
      this.log.error('pod failed', { err: String(err) });
      this.phase = 'Failed';
      this.reason = 'AgentError';
      this.message = String((err as Error).message ?? err);
      this.syncStatus();
    }
  }

  private async runInner(): Promise<void> {
    // Images first: an image outside the table fails the pod at once, with the table in the message.
    for (const c of this.containers.values()) {
      const r = resolveImage(c.spec.image, c.spec.command, c.spec.args);
      if (!r.ok) {
        c.state = { waiting: { reason: r.reason, message: r.message } };
        this.phase = 'Failed';
        this.reason = r.reason;
        this.message = r.message;
        this.log.warn('image not in the table', { image: c.spec.image });
        this.syncStatus();
        return;
      }
      c.argv = r.argv;
    }
    this.podIp = this.deps.ips.allocate();
    createPodNetwork(this.netns, this.podIp);
    this.refreshHosts();
    this.syncStatus();
    // Volumes (retried while a ConfigMap or Secret is missing, as the kubelet does).
    for (let attempt = 0; !this.stopping; attempt++) {
      try {
        this.volumes = await materializeVolumes(this.deps.client, this.pod, this.dir, this.podIp);
        break;
      } catch (err) {
        if (!(err instanceof VolumeNotReadyError) && !(err instanceof KubeApiError)) throw err;
        for (const c of this.containers.values()) {
          c.state = {
            waiting: { reason: c.kind === 'main' ? 'ContainerCreating' : 'PodInitializing', message: err.message },
          };
        }
        this.syncStatus();
        await sleep(Math.min(5000, 500 * (attempt + 1)));
      }
    }
    if (this.stopping || !this.volumes) return;
    this.scheduleTokenRenewal();

    // Init containers in order; sidecars stay up.
    for (const c of this.containers.values()) {
      if (this.stopping) return;
      if (c.kind === 'init') {
        const ok = await this.runToCompletion(c);
        if (!ok) return;
      } else if (c.kind === 'sidecar') {
        await this.startContainer(c);
        while (!c.started && !this.stopping) await sleep(50);
      }
    }
    if (this.stopping) return;
    this.initialized = true;
    for (const c of this.containers.values()) if (c.kind === 'main') void this.startContainer(c);
    this.syncStatus();
  }

  /** A regular init container: run until exit 0, restarting on failure unless restartPolicy is Never. */
  private async runToCompletion(c: Container): Promise<boolean> {
    for (;;) {
      await this.startContainer(c);
      const code = await (c.exited ?? Promise.resolve(1));
      if (this.stopping) return false;
      if (code === 0) return true;
      if (this.pod.spec.restartPolicy === 'Never' || c.restartCount >= MAX_RESTARTS) {
        this.phase = 'Failed';
        this.reason = 'InitContainerFailed';
        this.message = `init container ${c.spec.name} exited with ${code}`;
        this.syncStatus();
        return false;
      }
      await this.backoff(c);
      if (this.stopping) return false;
    }
  }

  private async backoff(c: Container): Promise<void> {
    c.lastState = c.state;
    c.state = {
      waiting: { reason: 'CrashLoopBackOff', message: `back-off restarting failed container ${c.spec.name}` },
    };
    c.restartCount++;
    this.syncStatus();
    await sleep(Math.min(10_000, 1000 * 2 ** Math.min(c.restartCount - 1, 4)));
  }

  private async startContainer(c: Container): Promise<void> {
    if (this.stopping || !this.volumes) return;
    let env: Record<string, string>;
    try {
      env = await containerEnv(this.deps.client, this.pod, c.spec, this.podIp);
    } catch (err) {
      c.state = { waiting: { reason: 'CreateContainerConfigError', message: (err as Error).message } };
      this.syncStatus();
      await sleep(2000);
      return this.startContainer(c);
    }
    // A minimesh program that is not built yet: say so, and retry (as an image pull would).
    const program = c.argv[0] === process.execPath ? c.argv[1] : undefined;
    if (program && program.startsWith(`${repoRoot}/`) && /\.m?js$/.test(program) && !existsSync(program)) {
      c.state = {
        waiting: { reason: 'CreateContainerError', message: `${program} does not exist: build it (npm run build)` },
      };
      this.syncStatus();
      await sleep(5000);
      return this.startContainer(c);
    }
    const startedAt = now();
    c.started = false;
    c.ready = false;
    c.killing = false;
    const proc = launchContainer({
      netns: this.netns,
      pod: this.pod,
      container: c.spec,
      argv: c.argv,
      env,
      volumes: this.volumes.volumes,
      hostsFile: this.hostsFile,
      logFile: join(this.dir, 'logs', `${c.spec.name}.log`),
      createdMountpointsFile: this.deps.createdMountpointsFile,
    });
    c.proc = proc;
    c.pid = proc.pid;
    c.state = { running: { startedAt } };
    this.log.info('container started', { container: c.spec.name, pid: proc.pid, argv: c.argv });
    c.exited = new Promise<number>((resolve) => {
      proc.on('exit', (code, signal) => {
        const exitCode =
          code ??
          128 + (signal ? (({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2 } as Record<string, number>)[signal] ?? 1) : 1);
        this.clearTimers(c);
        c.proc = undefined;
        c.started = false;
        c.ready = false;
        c.state = {
          terminated: {
            exitCode,
            reason: exitCode === 0 ? 'Completed' : 'Error',
            startedAt,
            finishedAt: now(),
            ...(signal ? { message: `killed by ${signal}` } : {}),
          },
        };
        this.log.info('container exited', { container: c.spec.name, exitCode });
        resolve(exitCode);
        this.onExit(c, exitCode);
      });
      proc.on('error', () => resolve(1));
    });
    this.startProbes(c);
    this.syncStatus();
  }

  private onExit(c: Container, code: number): void {
    if (this.stopping) return this.syncStatus();
    if (c.kind === 'init') return this.syncStatus();
    const policy = this.pod.spec.restartPolicy ?? 'Always';
    const restart = c.kind === 'sidecar' || policy === 'Always' || (policy === 'OnFailure' && code !== 0);
    if (restart && c.restartCount < MAX_RESTARTS) {
      void (async () => {
        await this.backoff(c);
        if (!this.stopping) await this.startContainer(c);
      })();
      return;
    }
    // Every regular container done: the pod's phase is final; its sidecars stop.
    const mains = [...this.containers.values()].filter((x) => x.kind === 'main');
    if (mains.every((m) => 'terminated' in m.state)) {
      const failed = mains.some((m) => 'terminated' in m.state && m.state.terminated.exitCode !== 0);
      this.phase = failed ? 'Failed' : 'Succeeded';
      void this.stopContainers(this.gracePeriodMs(), ['sidecar']).then(() => this.syncStatus());
    }
    this.syncStatus();
  }

  private clearTimers(c: Container): void {
    for (const t of c.timers) clearTimeout(t);
    c.timers = [];
  }

  /** Startup probe gates liveness/readiness; until their first success probes run at most 1 s apart. */
  private startProbes(c: Container): void {
    const spec = c.spec;
    const ctx = () => ({
      podIp: this.podIp,
      containers: [...(this.pod.spec.containers ?? []), ...(this.pod.spec.initContainers ?? [])],
      pid: c.pid,
    });
    const loop = (
      probe: KubeObject,
      onResult: (ok: boolean, consecutive: number) => boolean,
      fastUntilSuccess: boolean,
    ) => {
      let last: boolean | undefined;
      let consecutive = 0;
      let succeededOnce = false;
      const tick = async () => {
        if (!c.proc || this.stopping) return;
        const ok = await runProbe(probe, ctx()).catch(() => false);
        if (!c.proc || this.stopping) return;
        consecutive = ok === last ? consecutive + 1 : 1;
        last = ok;
        if (ok) succeededOnce = true;
        if (!onResult(ok, consecutive)) return;
        const period = (probe.periodSeconds ?? 10) * 1000;
        c.timers.push(setTimeout(tick, fastUntilSuccess && !succeededOnce ? Math.min(period, 1000) : period));
      };
      c.timers.push(setTimeout(tick, (probe.initialDelaySeconds ?? 0) * 1000));
    };
    const afterStarted = () => {
      c.started = true;
      if (spec.readinessProbe) {
        loop(
          spec.readinessProbe,
          (ok, n) => {
            const want = ok
              ? n >= (spec.readinessProbe.successThreshold ?? 1)
              : n >= (spec.readinessProbe.failureThreshold ?? 3) || !c.ready;
            if (want && c.ready !== ok) {
              c.ready = ok;
              this.syncStatus();
            }
            return true;
          },
          true,
        );
      } else {
        c.ready = true;
      }
      if (spec.livenessProbe) {
        loop(
          spec.livenessProbe,
          (ok, n) => {
            if (!ok && n >= (spec.livenessProbe.failureThreshold ?? 3)) {
              this.log.warn('liveness probe failed: restarting', { container: spec.name });
              void this.killContainer(c, this.gracePeriodMs());
              return false;
            }
            return true;
          },
          false,
        );
      }
      this.syncStatus();
    };
    if (spec.startupProbe) {
      loop(
        spec.startupProbe,
        (ok, n) => {
          if (ok) {
            afterStarted();
            return false;
          }
          if (n >= (spec.startupProbe.failureThreshold ?? 3)) {
            this.log.warn('startup probe failed: restarting', { container: spec.name });
            void this.killContainer(c, this.gracePeriodMs());
            return false;
          }
          return true;
        },
        true,
      );
    } else {
      afterStarted();
    }
  }

  private gracePeriodMs(): number {
    const s = this.pod.metadata.deletionGracePeriodSeconds ?? this.pod.spec.terminationGracePeriodSeconds ?? 30;
    return Math.max(0, Number(s)) * 1000;
  }

  private async killContainer(c: Container, graceMs: number): Promise<void> {
    if (!c.pid || !c.proc || c.killing) return;
    c.killing = true;
    this.clearTimers(c);
    await killGroup(c.pid, graceMs);
    await c.exited;
  }

  private async stopContainers(graceMs: number, kinds: Kind[]): Promise<void> {
    const list = [...this.containers.values()].filter((c) => kinds.includes(c.kind) && c.proc);
    // Sidecars stop after the regular containers, in reverse order (as the kubelet does).
    const mains = list.filter((c) => c.kind !== 'sidecar');
    const sidecars = list.filter((c) => c.kind === 'sidecar').reverse();
    const deadline = Date.now() + graceMs;
    await Promise.all(mains.map((c) => this.killContainer(c, graceMs)));
    for (const c of sidecars) await this.killContainer(c, Math.max(0, deadline - Date.now()));
  }

  /** Graceful termination: SIGTERM, the grace period, SIGKILL; then the network and volumes go. */
  async stop(graceMs = this.gracePeriodMs()): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.tokenTimer) clearTimeout(this.tokenTimer);
    for (const c of this.containers.values()) this.clearTimers(c);
    await this.stopContainers(graceMs, ['init', 'sidecar', 'main']);
    for (const c of this.containers.values()) if (c.pid && pidAlive(c.pid)) await killGroup(c.pid, 0);
    deletePodNetwork(this.netns);
    if (this.podIp) this.deps.ips.release(this.podIp);
    for (const v of this.volumes?.volumes.values() ?? []) {
      if (v.hostPath.startsWith(this.dir) && isMountPoint(v.hostPath)) {
        try {
          execFileSync('umount', ['-l', v.hostPath]);
        } catch {
          /* already gone */
        }
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
    this.log.info('pod stopped');
  }

  private scheduleTokenRenewal(): void {
    const tokens = this.volumes?.tokens ?? [];
    if (tokens.length === 0) return;
    const min = Math.min(...tokens.map((t) => t.expirationSeconds));
    this.tokenTimer = setTimeout(() => {
      if (this.stopping || !this.volumes) return;
      renewTokens(this.deps.client, this.pod, tokens).then(
        () => this.scheduleTokenRenewal(),
        (err: Error) => {
          this.log.warn('token renewal failed', { err: err.message });
          this.scheduleTokenRenewal();
        },
      );
    }, min * 800);
    this.tokenTimer.unref();
  }

  /** The pod's status as the kubelet would report it. */
  status(): KubeObject {
    const t = now();
    const cs = (c: Container) => ({
      name: c.spec.name,
      image: c.spec.image,
      imageID: c.spec.image,
      ...(c.pid ? { containerID: `minimesh://${this.uid.slice(0, 8)}-${c.spec.name}-${c.restartCount}` } : {}),
      ready: c.ready,
      started: c.started,
      restartCount: c.restartCount,
      state: c.state,
      lastState: c.lastState ?? {},
    });
    const all = [...this.containers.values()];
    const inits = all.filter((c) => c.kind !== 'main');
    const mains = all.filter((c) => c.kind === 'main');
    const containersReady =
      mains.every((c) => c.ready) &&
      inits.filter((c) => c.kind === 'sidecar').every((c) => c.ready) &&
      this.initialized;
    let phase = this.phase;
    if (phase === 'Pending' && this.initialized && mains.some((c) => 'running' in c.state || c.restartCount > 0))
      phase = 'Running';
    const cond = (type: string, ok: boolean, reason?: string) => {
      const prev = this.transitions.get(type);
      if (!prev || prev.ok !== ok) this.transitions.set(type, { ok, at: t });
      return {
        type,
        status: ok ? 'True' : 'False',
        lastProbeTime: null,
        lastTransitionTime: this.transitions.get(type)!.at,
        ...(reason && !ok ? { reason } : {}),
      };
    };
    const status: KubeObject = {
      phase,
      ...(this.reason ? { reason: this.reason } : {}),
      ...(this.message ? { message: this.message } : {}),
      hostIP: NODE_IP,
      hostIPs: [{ ip: NODE_IP }],
      startTime: this.startTime,
      conditions: [
        cond('PodReadyToStartContainers', Boolean(this.podIp)),
        cond('Initialized', this.initialized, 'ContainersNotInitialized'),
        cond('ContainersReady', containersReady, 'ContainersNotReady'),
        cond('Ready', containersReady && phase === 'Running', 'ContainersNotReady'),
        cond('PodScheduled', true),
      ],
      initContainerStatuses: inits.map(cs),
      containerStatuses: mains.map(cs),
    };
    if (this.podIp) {
      status.podIP = this.podIp;
      status.podIPs = [{ ip: this.podIp }];
    }
    return status;
  }

  /** Writes the status (coalesced: at most one write in flight plus one pending). */
  syncStatus(): void {
    if (this.statusPending) return;
    this.statusPending = true;
    this.statusChain = this.statusChain.then(async () => {
      await sleep(50);
      this.statusPending = false;
      const { namespace, name } = this.pod.metadata;
      try {
        await this.deps.client.request(
          'PATCH',
          `/api/v1/namespaces/${namespace}/pods/${name}/status`,
          { metadata: { uid: this.uid }, status: this.status() },
          'application/merge-patch+json',
        );
      } catch (err) {
        if (!(err instanceof KubeApiError && (err.status === 404 || err.status === 409)))
          this.log.warn('status update failed', { err: String(err) });
      }
    });
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  get finished(): boolean {
    return this.phase === 'Succeeded' || this.phase === 'Failed';
  }
}
