/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The dashboard in the browser: it asks the local server's /api (the viz API the CLI uses) every few
// seconds and draws tables, sparklines, charts and the edge graph with ../svg.js; live requests come
// from /api/tap as server-sent events. Errors show in one banner, in the CLI's words.
import { edgeGraph, escapeXml, lineChart, sparkline } from '../svg.js';

interface StatRow {
  namespace: string;
  name: string;
  status?: string;
  meshedPods: number;
  totalPods: number;
  success: number | null;
  rps: number | null;
  latencyP50: number | null;
  latencyP95: number | null;
  latencyP99: number | null;
  tcpConnections: number | null;
}
interface EdgeRow {
  src: string;
  srcNamespace: string;
  dst: string;
  dstNamespace: string;
  clientId: string;
  serverId: string;
  secured: boolean;
  msg: string;
}
interface Point {
  t: number;
  rps: number | null;
  successRate: number | null;
  p50: number | null;
  p95: number | null;
  p99: number | null;
}
interface TapPeer {
  ip: string;
  port: number;
  labels: Record<string, string>;
  identity: string;
}
interface TapRecord {
  id: string;
  pod: string;
  direction: string;
  type: string;
  method?: string;
  authority?: string;
  path?: string;
  status?: number;
  latencyMs?: number;
  tls: string;
  source: TapPeer;
  destination: TapPeer;
}

const $ = <T extends HTMLElement>(sel: string): T => document.querySelector(sel) as T;
const state = { namespace: '', kind: 'deploy', selected: '', history: {} as Record<string, Point[]> };

function showError(message: string | undefined): void {
  const el = $('#error');
  el.textContent = message ?? '';
  el.classList.toggle('shown', Boolean(message));
}

async function api<T>(path: string): Promise<T> {
  const res = await fetch(path);
  const body = (await res.json()) as T & { error?: string };
  if (!res.ok || body.error) throw new Error(body.error ?? `HTTP ${res.status}`);
  return body;
}

const pct = (v: number | null) => (v === null ? '-' : `${(v * 100).toFixed(2)}%`);
const num = (v: number | null, unit = '') =>
  v === null ? '-' : `${v < 10 ? Number(v.toFixed(1)) : Math.round(v)}${unit}`;
const qs = (o: Record<string, string>) => new URLSearchParams(o).toString();

async function loadNamespaces(): Promise<void> {
  const { namespaces } = await api<{ namespaces: Array<{ name: string; meshedPods: number; totalPods: number }> }>(
    '/api/namespaces',
  );
  const select = $<HTMLSelectElement>('#namespace');
  const want =
    state.namespace || new URLSearchParams(location.search).get('namespace') || select.dataset.default || 'default';
  select.innerHTML = namespaces
    .map((n) => `<option${n.name === want ? ' selected' : ''}>${escapeXml(n.name)}</option>`)
    .join('');
  state.namespace = select.value;
  $('#namespaces tbody').innerHTML = namespaces
    .map(
      (n) =>
        `<tr data-namespace="${escapeXml(n.name)}"><td>${escapeXml(n.name)}</td><td class="num">${n.meshedPods}/${n.totalPods}</td></tr>`,
    )
    .join('');
}

async function loadWorkloads(): Promise<void> {
  const base = { namespace: state.namespace, kind: state.kind };
  const [{ rows }, { history }] = await Promise.all([
    api<{ rows: StatRow[] }>(`/api/stat?${qs(base)}`),
    api<{ history: Record<string, Point[]> }>(`/api/history?${qs({ ...base, minutes: '15' })}`),
  ]);
  state.history = history;
  if (!state.selected && rows.length) state.selected = (rows.find((r) => r.rps !== null) ?? rows[0])!.name;
  $('#workloads tbody').innerHTML = rows
    .map((r) => {
      const h = history[`${r.namespace}/${r.name}`] ?? [];
      return `<tr data-name="${escapeXml(r.name)}"${r.name === state.selected ? ' class="selected"' : ''}>
        <td>${escapeXml(r.name)}</td><td class="num meshed">${r.meshedPods}/${r.totalPods}</td>
        <td class="num success">${pct(r.success)}</td><td class="num rps">${r.rps === null ? '-' : `${r.rps.toFixed(1)}rps`}</td>
        <td class="num">${num(r.latencyP50, 'ms')}</td><td class="num">${num(r.latencyP95, 'ms')}</td><td class="num">${num(r.latencyP99, 'ms')}</td>
        <td class="num">${num(r.tcpConnections)}</td>
        <td>${sparkline(
          h.map((p) => p.rps),
          { title: `${r.name}: RPS, last 15 minutes` },
        )}</td></tr>`;
    })
    .join('');
  drawCharts();
  ($('#tap-toggle') as HTMLButtonElement).disabled =
    !state.selected || tapping !== undefined ? tapping === undefined : false;
}

function drawCharts(): void {
  const h = state.history[`${state.namespace}/${state.selected}`] ?? [];
  $('#selected').textContent = state.selected ? `${state.kind}/${state.selected}` : 'no workload selected';
  $('#latency-chart').innerHTML = lineChart(
    [
      { name: 'p50', color: '#2b7de9', points: h.map((p) => [p.t, p.p50] as const) },
      { name: 'p95', color: '#e9a12b', points: h.map((p) => [p.t, p.p95] as const) },
      { name: 'p99', color: '#d9363e', points: h.map((p) => [p.t, p.p99] as const) },
    ],
    { title: 'Latency (ms)', unit: 'ms' },
  );
  $('#rps-chart').innerHTML = lineChart(
    [{ name: 'rps', color: '#2a9d4b', points: h.map((p) => [p.t, p.rps] as const) }],
    {
      title: 'Requests per second',
      unit: '',
    },
  );
}

async function loadEdges(): Promise<void> {
  const { edges } = await api<{ edges: EdgeRow[] }>(
    `/api/edges?${qs({ namespace: state.namespace, kind: state.kind })}`,
  );
  $('#graph').innerHTML = edgeGraph(edges);
  $('#edges tbody').innerHTML = edges
    .map(
      (
        e,
      ) => `<tr data-src="${escapeXml(e.src)}" data-dst="${escapeXml(e.dst)}"><td>${escapeXml(e.src)}</td><td>${escapeXml(e.dst)}</td>
      <td class="${e.secured ? 'secured' : 'plaintext'}">${e.secured ? '√ mTLS' : `× ${escapeXml(e.msg)}`}</td>
      <td>${escapeXml(e.clientId || '-')}</td><td>${escapeXml(e.serverId || '-')}</td></tr>`,
    )
    .join('');
}

async function refresh(): Promise<void> {
  try {
    await loadNamespaces();
    await Promise.all([loadWorkloads(), loadEdges()]);
    showError(undefined);
    $('#updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
    document.body.dataset.loaded = 'true';
  } catch (err) {
    showError((err as Error).message);
    document.body.dataset.loaded = 'error';
  }
}

let tapping: EventSource | undefined;
function stopTap(status: string): void {
  tapping?.close();
  tapping = undefined;
  $('#tap-toggle').textContent = 'Start tap';
  $('#tap-status').textContent = status;
}
function startTap(): void {
  if (!state.selected) return;
  const pending = new Map<string, HTMLTableRowElement>();
  $('#tap tbody').innerHTML = '';
  tapping = new EventSource(
    `/api/tap?${qs({ namespace: state.namespace, kind: state.kind, name: state.selected, limit: '1000' })}`,
  );
  $('#tap-toggle').textContent = 'Stop tap';
  $('#tap-status').textContent = `tapping ${state.kind}/${state.selected}…`;
  tapping.addEventListener('start', (e) => {
    const { pods } = JSON.parse((e as MessageEvent).data) as { pods: string[] };
    $('#tap-status').textContent = `tapping ${pods.length} pod(s) of ${state.kind}/${state.selected}`;
  });
  tapping.addEventListener('record', (e) => {
    const r = JSON.parse((e as MessageEvent).data) as TapRecord;
    const key = `${r.pod}|${r.direction}|${r.id}`;
    const peer = (p: TapPeer) =>
      `${escapeXml(p.labels.pod || `${p.ip}:${p.port}`)}<br><span class="muted">${escapeXml(p.identity || '-')}</span>`;
    if (r.type === 'requestInit') {
      const tr = document.createElement('tr');
      tr.className = 'tap-row';
      tr.innerHTML = `<td>${new Date().toLocaleTimeString()}</td><td>${r.direction === 'inbound' ? 'in' : 'out'}</td><td>${escapeXml(r.method ?? '')}</td>
        <td>${escapeXml(r.authority ?? '')}</td><td>${escapeXml(r.path ?? '')}</td><td class="num status">…</td><td class="num latency"></td>
        <td>${peer(r.source)}</td><td>${peer(r.destination)}</td><td class="${r.tls === 'true' ? 'secured' : 'plaintext'}">${escapeXml(r.tls)}</td>`;
      const body = $('#tap tbody');
      body.insertBefore(tr, body.firstChild);
      while (body.children.length > 200) body.lastChild?.remove();
      pending.set(key, tr);
    } else if (r.type === 'responseInit') {
      const tr = pending.get(key);
      if (tr) {
        (tr.querySelector('.status') as HTMLElement).textContent = String(r.status);
        (tr.querySelector('.latency') as HTMLElement).textContent = `${num(r.latencyMs ?? null, 'ms')}`;
      }
    } else pending.delete(key);
  });
  tapping.addEventListener('warning', (e) =>
    showError((JSON.parse((e as MessageEvent).data) as { message: string }).message),
  );
  tapping.addEventListener('error', (e) => {
    const data = (e as MessageEvent).data as string | undefined;
    if (data) showError((JSON.parse(data) as { message: string }).message);
    stopTap(data ? 'tap failed' : 'tap ended');
  });
  tapping.addEventListener('end', () => stopTap('tap ended (limit reached)'));
}

function wire(): void {
  $('#namespace').addEventListener('change', (e) => {
    state.namespace = (e.target as HTMLSelectElement).value;
    state.selected = '';
    void refresh();
  });
  $('#kind').addEventListener('change', (e) => {
    state.kind = (e.target as HTMLSelectElement).value;
    state.selected = '';
    void refresh();
  });
  $('#workloads tbody').addEventListener('click', (e) => {
    const tr = (e.target as HTMLElement).closest('tr');
    if (!tr?.dataset.name) return;
    state.selected = tr.dataset.name;
    for (const row of document.querySelectorAll('#workloads tbody tr')) row.classList.toggle('selected', row === tr);
    drawCharts();
    ($('#tap-toggle') as HTMLButtonElement).disabled = false;
  });
  $('#namespaces tbody').addEventListener('click', (e) => {
    const tr = (e.target as HTMLElement).closest('tr');
    if (!tr?.dataset.namespace) return;
    state.namespace = tr.dataset.namespace;
    state.selected = '';
    ($('#namespace') as HTMLSelectElement).value = state.namespace;
    void refresh();
  });
  $('#tap-toggle').addEventListener('click', () => (tapping ? stopTap('tap stopped') : startTap()));
}

wire();
void refresh();
setInterval(() => void refresh(), 5000);
