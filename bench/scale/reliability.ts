// Reliability at size (issue 29 item 5), run by the scale bench at its largest size (minimesh):
//   leader kill   two destination replicas, the client proxies spread over both; during churn the Lease
//                 holder is killed (SIGKILL, as an OOM kill or a node loss: the Lease is not released).
//                 Figures: how long until the other replica holds the Lease (goal: within the Lease's
//                 duration), streams reopened, and every stream's final view against the API.
//   API restart   destination and policy with every stream open; kube-apiserver stopped and started
//                 again. From the audit log: each program's LIST and WATCH requests after the restart
//                 (a WATCH that resumes carries its resourceVersion; a LIST is a relist).
import { createReadStream, readdirSync, readFileSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { ensureCluster, startChurn, stateDir, type KubeClient, type WorkloadLayout } from '@minimesh/local-cluster';
import type { Driven } from '../lib/driven.js';
import { phase, round } from '../lib/report.js';
import { minimesh, now, type StartContext, type Started } from './programs.js';
import { apiEndpoints, compareViews, type Views } from './views.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LEASE = 'minimesh-destination-endpoint-write';
/** destination's default --lease-duration */
const LEASE_DURATION_MS = 30_000;

export interface ReliabilityContext {
  admin: KubeClient;
  layout: WorkloadLayout;
  start: StartContext;
  services: Array<{ authority: string; ip: string; port: number }>;
  pods: Array<{ ns: string; name: string; port: number }>;
  clients: () => Driven;
  clientCount: number;
  churnPodsPerS: number;
  churnSeconds: number;
  waitSettled: () => Promise<void>;
  track: (s: Started) => void;
}

async function ask<T>(d: Driven, m: object): Promise<T> {
  d.send(m);
  return await d.next<T>();
}

async function holder(admin: KubeClient, ns: string): Promise<string | undefined> {
  const lease = await admin.get<{ spec?: { holderIdentity?: string } }>(
    `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${LEASE}`,
  );
  return lease?.spec?.holderIdentity;
}

async function viewsAgainstApi(admin: KubeClient, clients: Driven): Promise<ReturnType<typeof compareViews>> {
  let d = compareViews((await ask<{ views: Views }>(clients, { cmd: 'views' })).views, await apiEndpoints(admin));
  // the API has settled: give the last updates up to 10 s to arrive
  for (let i = 0; i < 20 && d.diverging > 0; i++) {
    await sleep(500);
    d = compareViews((await ask<{ views: Views }>(clients, { cmd: 'views' })).views, await apiEndpoints(admin));
  }
  return d;
}

export async function leaderKill(ctx: ReliabilityContext): Promise<Record<string, unknown>> {
  const { admin } = ctx;
  const ns = ctx.start.controllerNamespace;
  phase('reliability: two destination replicas');
  const a = await minimesh.start('destination', { ...ctx.start, podName: 'scale-destination-a' });
  ctx.track(a);
  const b = await minimesh.start('destination', { ...ctx.start, podName: 'scale-destination-b' });
  ctx.track(b);
  let lead: string | undefined;
  for (let i = 0; i < 300 && !lead; i++) {
    lead = await holder(admin, ns);
    if (!lead) await sleep(200);
  }
  if (!lead) throw new Error('no destination replica took the Lease in 60 s');
  const [leader, other] = lead === 'scale-destination-a' ? [a, b] : [b, a];
  const clients = ctx.clients();
  await clients.next();
  await ask(clients, {
    cmd: 'open',
    destination: [`127.0.0.1:${a.grpcPort}`, `127.0.0.1:${b.grpcPort}`],
    policy: [],
    clients: ctx.clientCount,
    node: 'kwok-0',
    services: ctx.services,
    pods: [],
  });
  phase(`reliability: churn, then SIGKILL to the leader (${lead})`);
  const churn = startChurn(ctx.layout, { podsPerSecond: ctx.churnPodsPerS, admin });
  await sleep(Math.min(10_000, (ctx.churnSeconds * 1000) / 3));
  const killedAt = now();
  leader.child.kill('SIGKILL');
  let tookOverMs = NaN;
  const otherName = lead === 'scale-destination-a' ? 'scale-destination-b' : 'scale-destination-a';
  while (now() - killedAt < LEASE_DURATION_MS * 3) {
    if ((await holder(admin, ns).catch(() => undefined)) === otherName) {
      tookOverMs = now() - killedAt;
      break;
    }
    await sleep(200);
  }
  const left = ctx.churnSeconds * 1000 - (now() - killedAt) - 10_000;
  if (left > 0) await sleep(left);
  await churn.stop();
  await ctx.waitSettled();
  await sleep(3000);
  const d = await viewsAgainstApi(admin, clients);
  const { stats } = await ask<{ stats: Record<string, { open: number; errors: number; reopens: number }> }>(clients, {
    cmd: 'stats',
  });
  await ask(clients, { cmd: 'close' });
  clients.send({ cmd: 'exit' });
  await other.stop();
  return {
    leaseDurationMs: LEASE_DURATION_MS,
    newLeaderAfterMs: round(tookOverMs, 0),
    withinLeaseDuration: tookOverMs <= LEASE_DURATION_MS,
    getStreams: ctx.clientCount * ctx.services.length,
    streamsOpenAtEnd: stats.get?.open,
    streamsReopened: stats.get?.reopens,
    divergingStreams: d.diverging,
    missingEndpoints: d.missing,
    extraEndpoints: d.extra,
    examples: d.examples,
  };
}

/** Audit events since byte `offset` whose user agent starts with one of `agents`: [agent, verb, uri]. */
/**
 * Audit events of `agents` received since `sinceIso`, from audit.log and the files kube-apiserver rotated
 * it into (audit-<time>.log: a restart at 5,000 pods writes past --audit-log-maxsize).
 */
async function auditSince(
  sinceIso: string,
  sinceMs: number,
  agents: string[],
): Promise<Array<[string, string, string]>> {
  const dir = stateDir();
  const files = readdirSync(dir)
    .filter((f) => /^audit.*\.log$/.test(f))
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).mtimeMs >= sinceMs);
  const out: Array<[string, string, string]> = [];
  for (const file of files) {
    const lines = createInterface({ input: createReadStream(file) });
    for await (const line of lines) {
      if (!agents.some((a) => line.includes(a))) continue;
      try {
        const e = JSON.parse(line) as {
          stage: string;
          verb: string;
          requestURI: string;
          userAgent?: string;
          requestReceivedTimestamp?: string;
        };
        if ((e.requestReceivedTimestamp ?? '') < sinceIso) continue;
        const agent = agents.find((x) => e.userAgent?.startsWith(x));
        // one event per request: a watch when its response starts, anything else when it completes
        const once = e.verb === 'watch' ? e.stage === 'ResponseStarted' : e.stage === 'ResponseComplete';
        if (agent && once) out.push([agent, e.verb, e.requestURI]);
      } catch {
        // a line being written
      }
    }
  }
  return out;
}

/** Per program: lists (first pages only), watches, and watches of a resource it did not list again (resumed). */
function relistFigures(events: Array<[string, string, string]>, agent: string): Record<string, unknown> {
  const path = (uri: string) => uri.split('?')[0]!;
  const mine = events.filter(([a]) => a === agent);
  const listed = new Set(mine.filter(([, v, u]) => v === 'list' && !u.includes('continue=')).map(([, , u]) => path(u)));
  const watched = new Set(mine.filter(([, v]) => v === 'watch').map(([, , u]) => path(u)));
  return {
    lists: listed.size,
    listed: [...listed].sort(),
    watches: mine.filter(([, v]) => v === 'watch').length,
    resumedWatches: [...watched].filter((p) => !listed.has(p)).length,
    resumed: [...watched].filter((p) => !listed.has(p)).sort(),
  };
}

export async function apiServerRestart(ctx: ReliabilityContext): Promise<Record<string, unknown>> {
  const { admin } = ctx;
  phase('reliability: destination and policy with every stream open, then kube-apiserver restarted');
  const dst = await minimesh.start('destination', { ...ctx.start, podName: 'scale-destination-r' });
  ctx.track(dst);
  const pol = await minimesh.start('policy', { ...ctx.start, podName: 'scale-policy-r' });
  ctx.track(pol);
  const clients = ctx.clients();
  await clients.next();
  await ask(clients, {
    cmd: 'open',
    destination: [`127.0.0.1:${dst.grpcPort}`],
    policy: [`127.0.0.1:${pol.grpcPort}`],
    clients: ctx.clientCount,
    node: 'kwok-0',
    services: ctx.services,
    pods: ctx.pods,
  });
  const pidFile = join(stateDir(), 'pids', 'kube-apiserver.pid');
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  const sinceMs = Date.now();
  const sinceIso = new Date(sinceMs).toISOString();
  const t0 = now();
  process.kill(pid, 'SIGTERM');
  // A graceful stop drains every open watch: at 5,000 pods it took the whole of kube-apiserver's 60 s
  // shutdown timeout (2026-11-29), and starting the next one before the last has exited fails. Wait for
  // it (at most 120 s, then SIGKILL).
  let stopped = false;
  for (let i = 0; i < 1200 && !stopped; i++) {
    try {
      process.kill(pid, 0);
      await sleep(100);
    } catch {
      stopped = true;
    }
  }
  if (!stopped) process.kill(pid, 'SIGKILL');
  const stopMs = now() - t0;
  await ensureCluster();
  const backMs = now() - t0;
  await sleep(30_000);
  const events = await auditSince(sinceIso, sinceMs, ['minimesh-destination', 'minimesh-policy']);
  const d = await viewsAgainstApi(admin, clients);
  const { stats } = await ask<{ stats: Record<string, { open: number; errors: number; reopens: number }> }>(clients, {
    cmd: 'stats',
  });
  await ask(clients, { cmd: 'close' });
  clients.send({ cmd: 'exit' });
  await dst.stop();
  await pol.stop();
  return {
    apiServerStopMs: round(stopMs, 0),
    apiServerKilled: !stopped,
    apiServerBackMs: round(backMs, 0),
    destination: relistFigures(events, 'minimesh-destination'),
    policy: relistFigures(events, 'minimesh-policy'),
    streams: stats,
    divergingStreams: d.diverging,
    examples: d.examples,
  };
}
