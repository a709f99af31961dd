// The dashboard's pictures as SVG text: sparklines, line charts over time, and the edge graph. Pure
// (no DOM), so the server's tests check them and the browser imports the same module.

export function escapeXml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );
}

const fmt = (v: number): string => (Number.isInteger(v) ? String(v) : v.toFixed(1));

/** A sparkline of the last values; gaps (null) break the line. Empty data: a flat grey line. */
export function sparkline(
  values: ReadonlyArray<number | null>,
  opts: { width?: number; height?: number; color?: string; title?: string } = {},
): string {
  const w = opts.width ?? 120;
  const h = opts.height ?? 24;
  const finite = values.filter((v): v is number => v !== null && Number.isFinite(v));
  const title = opts.title ? `<title>${escapeXml(opts.title)}</title>` : '';
  if (finite.length === 0)
    return `<svg class="spark" xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">${title}<line x1="0" y1="${h - 1}" x2="${w}" y2="${h - 1}" stroke="#ccc"/></svg>`;
  const max = Math.max(...finite);
  const min = Math.min(0, ...finite);
  const span = max - min || 1;
  const step = values.length > 1 ? w / (values.length - 1) : w;
  let d = '';
  let pen = false;
  values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) {
      pen = false;
      return;
    }
    const x = i * step;
    const y = h - 2 - ((v - min) / span) * (h - 4);
    d += `${pen ? 'L' : 'M'}${fmt(x)},${fmt(y)}`;
    pen = true;
  });
  return `<svg class="spark" xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">${title}<path d="${d}" fill="none" stroke="${opts.color ?? '#2b7de9'}" stroke-width="1.5"/></svg>`;
}

export interface ChartSeries {
  name: string;
  color: string;
  /** [unix seconds, value] */
  points: ReadonlyArray<readonly [number, number | null]>;
}

/** "Nice" axis ticks from 0 to at least max. */
export function ticks(max: number, count = 4): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = 0; v <= max + step * 0.999; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** A line chart over time: y from 0, time on x (hh:mm), a legend, one path per series. */
export function lineChart(
  series: readonly ChartSeries[],
  opts: { width?: number; height?: number; title: string; unit: string },
): string {
  const W = opts.width ?? 480;
  const H = opts.height ?? 200;
  const m = { l: 48, r: 12, t: 24, b: 28 };
  const all = series.flatMap((s) => s.points);
  const ts = all.map((p) => p[0]);
  const vs = all.map((p) => p[1]).filter((v): v is number => v !== null && Number.isFinite(v));
  const t0 = ts.length ? Math.min(...ts) : 0;
  const t1 = ts.length ? Math.max(...ts) : 1;
  const yt = ticks(vs.length ? Math.max(...vs) : 0);
  const ymax = yt[yt.length - 1] ?? 1;
  const x = (t: number) => m.l + ((t - t0) / (t1 - t0 || 1)) * (W - m.l - m.r);
  const y = (v: number) => H - m.b - (v / (ymax || 1)) * (H - m.t - m.b);
  const parts: string[] = [];
  parts.push(
    `<text x="${m.l}" y="14" class="chart-title" font-size="12" font-weight="bold">${escapeXml(opts.title)}</text>`,
  );
  for (const v of yt) {
    parts.push(`<line x1="${m.l}" x2="${W - m.r}" y1="${fmt(y(v))}" y2="${fmt(y(v))}" stroke="#eee"/>`);
    parts.push(
      `<text x="${m.l - 4}" y="${fmt(y(v) + 4)}" font-size="10" text-anchor="end">${fmt(v)}${escapeXml(opts.unit)}</text>`,
    );
  }
  const clock = (t: number) => new Date(t * 1000).toISOString().slice(11, 16);
  if (ts.length) {
    const anchors = ['start', 'middle', 'end'];
    [t0, (t0 + t1) / 2, t1].forEach((t, i) =>
      parts.push(`<text x="${fmt(x(t))}" y="${H - 8}" font-size="10" text-anchor="${anchors[i]}">${clock(t)}</text>`),
    );
  }
  if (vs.length === 0)
    parts.push(`<text x="${W / 2}" y="${H / 2}" font-size="12" text-anchor="middle" fill="#888">no data yet</text>`);
  series.forEach((s, i) => {
    let d = '';
    let pen = false;
    for (const [t, v] of s.points) {
      if (v === null || !Number.isFinite(v)) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${fmt(x(t))},${fmt(y(v))}`;
      pen = true;
    }
    if (d)
      parts.push(
        `<path class="series" data-series="${escapeXml(s.name)}" d="${d}" fill="none" stroke="${s.color}" stroke-width="1.5"/>`,
      );
    const lx = W - m.r - 70 * (series.length - i);
    parts.push(
      `<rect x="${lx}" y="6" width="10" height="3" fill="${s.color}"/><text x="${lx + 14}" y="11" font-size="10">${escapeXml(s.name)}</text>`,
    );
  });
  return `<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">${parts.join('')}</svg>`;
}

export interface GraphEdge {
  src: string;
  srcNamespace: string;
  dst: string;
  dstNamespace: string;
  secured: boolean;
  msg: string;
}

/**
 * The edge graph: workloads as boxes in columns (sources left, who they call to the right), one arrow
 * per edge: solid green with "mTLS" when secured, dashed red with the reason when not.
 */
export function edgeGraph(edges: readonly GraphEdge[], opts: { width?: number } = {}): string {
  const key = (ns: string, n: string) => `${ns}/${n}`;
  const nodes = new Map<string, { ns: string; name: string; col: number; row: number }>();
  for (const e of edges) {
    if (!nodes.has(key(e.srcNamespace, e.src)))
      nodes.set(key(e.srcNamespace, e.src), { ns: e.srcNamespace, name: e.src, col: 0, row: 0 });
    if (!nodes.has(key(e.dstNamespace, e.dst)))
      nodes.set(key(e.dstNamespace, e.dst), { ns: e.dstNamespace, name: e.dst, col: 0, row: 0 });
  }
  // Longest path from a source, bounded by the node count (cycles stop growing there).
  for (let pass = 0; pass < nodes.size; pass++) {
    let changed = false;
    for (const e of edges) {
      const a = nodes.get(key(e.srcNamespace, e.src))!;
      const b = nodes.get(key(e.dstNamespace, e.dst))!;
      if (a !== b && b.col < a.col + 1 && a.col + 1 < nodes.size) {
        b.col = a.col + 1;
        changed = true;
      }
    }
    if (!changed) break;
  }
  const cols = new Map<number, string[]>();
  for (const [k, n] of [...nodes.entries()].sort((x, y) => x[0].localeCompare(y[0]))) {
    const list = cols.get(n.col) ?? [];
    n.row = list.length;
    list.push(k);
    cols.set(n.col, list);
  }
  const bw = 150;
  const bh = 40;
  const gx = 110;
  const gy = 30;
  const ncol = Math.max(1, cols.size);
  const nrow = Math.max(1, ...[...cols.values()].map((c) => c.length));
  const W = Math.max(opts.width ?? 0, 20 + ncol * bw + (ncol - 1) * gx + 20);
  const H = 20 + nrow * bh + (nrow - 1) * gy + 20;
  const pos = (n: { col: number; row: number }) => ({ x: 20 + n.col * (bw + gx), y: 20 + n.row * (bh + gy) });
  const parts: string[] = [
    '<defs>',
    '<marker id="arrow-ok" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#2a9d4b"/></marker>',
    '<marker id="arrow-bad" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#d9363e"/></marker>',
    '</defs>',
  ];
  if (edges.length === 0)
    parts.push(
      `<text x="${W / 2}" y="${H / 2}" font-size="12" text-anchor="middle" fill="#888">no traffic between meshed workloads yet</text>`,
    );
  for (const e of edges) {
    const a = pos(nodes.get(key(e.srcNamespace, e.src))!);
    const b = pos(nodes.get(key(e.dstNamespace, e.dst))!);
    const x1 = a.x + bw;
    const y1 = a.y + bh / 2;
    const x2 = b.x;
    const y2 = b.y + bh / 2;
    const color = e.secured ? '#2a9d4b' : '#d9363e';
    const label = e.secured ? '√ mTLS' : `× plaintext${e.msg ? `: ${e.msg}` : ''}`;
    const mx = (x1 + x2) / 2;
    const my = (y1 + y2) / 2 - 6;
    parts.push(
      `<g class="edge ${e.secured ? 'secured' : 'plaintext'}" data-src="${escapeXml(key(e.srcNamespace, e.src))}" data-dst="${escapeXml(key(e.dstNamespace, e.dst))}">` +
        `<path d="M${x1},${y1} L${x2},${y2}" stroke="${color}" stroke-width="2" fill="none"${e.secured ? '' : ' stroke-dasharray="6 4"'} marker-end="url(#arrow-${e.secured ? 'ok' : 'bad'})"/>` +
        `<text x="${mx}" y="${my}" font-size="10" text-anchor="middle" fill="${color}">${escapeXml(label)}</text></g>`,
    );
  }
  for (const [k, n] of nodes) {
    const p = pos(n);
    parts.push(
      `<g class="node" data-node="${escapeXml(k)}"><rect x="${p.x}" y="${p.y}" width="${bw}" height="${bh}" rx="6" fill="#f4f7fb" stroke="#7a8ca5"/>` +
        `<text x="${p.x + bw / 2}" y="${p.y + 17}" font-size="12" text-anchor="middle" font-weight="bold">${escapeXml(n.name)}</text>` +
        `<text x="${p.x + bw / 2}" y="${p.y + 31}" font-size="10" text-anchor="middle" fill="#555">${escapeXml(n.ns)}</text></g>`,
    );
  }
  return `<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">${parts.join('')}</svg>`;
}
