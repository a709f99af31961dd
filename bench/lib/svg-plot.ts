// A line chart as an SVG document: a few series of (x, y) points against shared axes, with ticks, a
// legend and optional dashed reference lines (a goal). Hand-written on purpose: the charts the benches
// draw (one figure against cluster size, two to four series) take ~150 lines, while the well-kept npm
// plotting libraries either render in a browser (Vega, Chart.js need a canvas or a headless browser to
// make a file) or bring a native canvas build; a plain SVG file is what a Markdown page can show.

export interface Series {
  name: string;
  points: Array<[number, number]>;
  /** Stroke colour; a default palette otherwise. */
  color?: string;
  dashed?: boolean;
}

export interface PlotOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  width?: number;
  height?: number;
  /** y starts at 0 unless false (then at the data's minimum). */
  yFromZero?: boolean;
}

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];

const esc = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** Round tick values from at or below lo to at or above hi, about `count` of them (1, 2 or 5 times a power of ten apart). */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  const last = Math.ceil(hi / step - 1e-9) * step;
  for (let v = Math.floor(lo / step) * step; v <= last + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

const fmt = (v: number): string =>
  Math.abs(v) >= 1000 ? `${Number((v / 1000).toPrecision(3))}k` : String(Number(v.toPrecision(3)));

export function linePlot(o: PlotOptions): string {
  const W = o.width ?? 640;
  const H = o.height ?? 360;
  const m = { left: 64, right: 16, top: 36, bottom: 72 };
  const pts = o.series.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  const xs = pts.map(([x]) => x);
  const ys = pts.map(([, y]) => y);
  const xTicks = niceTicks(Math.min(0, ...xs), Math.max(1, ...xs));
  const yLo = o.yFromZero === false && ys.length > 0 ? Math.min(...ys) : 0;
  const yTicks = niceTicks(Math.min(yLo, ...ys), Math.max(yLo + 1e-9, ...ys));
  const [x0, x1] = [xTicks[0]!, xTicks.at(-1)!];
  const [y0, y1] = [yTicks[0]!, yTicks.at(-1)!];
  const px = (x: number) => m.left + ((x - x0) / (x1 - x0 || 1)) * (W - m.left - m.right);
  const py = (y: number) => H - m.bottom - ((y - y0) / (y1 - y0 || 1)) * (H - m.top - m.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${esc(o.title)}</text>`,
  ];
  for (const t of yTicks) {
    out.push(
      `<line x1="${m.left}" x2="${W - m.right}" y1="${py(t)}" y2="${py(t)}" stroke="#e5e5e5"/>`,
      `<text x="${m.left - 6}" y="${py(t) + 4}" text-anchor="end">${fmt(t)}</text>`,
    );
  }
  for (const t of xTicks) {
    out.push(
      `<line x1="${px(t)}" x2="${px(t)}" y1="${m.top}" y2="${H - m.bottom}" stroke="#f0f0f0"/>`,
      `<text x="${px(t)}" y="${H - m.bottom + 16}" text-anchor="middle">${fmt(t)}</text>`,
    );
  }
  out.push(
    `<line x1="${m.left}" x2="${W - m.right}" y1="${H - m.bottom}" y2="${H - m.bottom}" stroke="#333"/>`,
    `<line x1="${m.left}" x2="${m.left}" y1="${m.top}" y2="${H - m.bottom}" stroke="#333"/>`,
    `<text x="${(m.left + W - m.right) / 2}" y="${H - m.bottom + 34}" text-anchor="middle">${esc(o.xLabel)}</text>`,
    `<text transform="translate(16 ${(m.top + H - m.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`,
  );
  o.series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length]!;
    const points = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)).sort((a, b) => a[0] - b[0]);
    if (points.length > 1)
      out.push(
        `<polyline fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''} points="${points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ')}"/>`,
      );
    for (const [x, y] of points)
      out.push(
        `<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3" fill="${color}"><title>${esc(`${s.name}: ${fmt(x)} → ${y}`)}</title></circle>`,
      );
    const lx = m.left + (i % 3) * ((W - m.left - m.right) / 3);
    const ly = H - 20 + Math.floor(i / 3) * 14;
    out.push(
      `<line x1="${lx}" x2="${lx + 20}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
      `<text x="${lx + 26}" y="${ly}">${esc(s.name)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
