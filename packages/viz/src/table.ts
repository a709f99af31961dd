// Plain-text tables as kubectl and Linkerd print them: a header row, columns padded to their widest
// cell, three spaces between columns, names left-aligned and figures right-aligned. Pure.
export interface Column {
  header: string;
  align?: 'left' | 'right';
}

export function renderTable(columns: readonly Column[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = columns.map((c, i) => Math.max(width(c.header), ...rows.map((r) => width(r[i] ?? ''))));
  const line = (cells: readonly string[]) =>
    columns
      .map((c, i) => {
        const cell = cells[i] ?? '';
        const pad = ' '.repeat((widths[i] ?? 0) - width(cell));
        return c.align === 'right' ? pad + cell : cell + pad;
      })
      .join('   ')
      .replace(/\s+$/, '');
  return [line(columns.map((c) => c.header)), ...rows.map(line)].join('\n') + '\n';
}

/** Display width: √ and × and µ count as one, as they are. */
function width(s: string): number {
  return [...s].length;
}

/** 0.9876 → "98.77%"; null → "-". */
export function formatPercent(v: number | null): string {
  return v === null ? '-' : `${(v * 100).toFixed(2)}%`;
}

/** Requests per second as Linkerd prints them: "1.9rps", "0.1rps", "12.3rps". */
export function formatRps(v: number | null): string {
  if (v === null) return '-';
  return `${v < 0.05 && v > 0 ? v.toFixed(2) : v.toFixed(1)}rps`;
}

/** Milliseconds: one decimal below 10 ms ("0.8ms", "2.5ms"), whole above ("12ms"). */
export function formatMs(v: number | null): string {
  if (v === null) return '-';
  if (v < 10) return `${Number(v.toFixed(1))}ms`;
  return `${Math.round(v)}ms`;
}

/** Bytes per second: "512B/s", "1.5KiB/s", "3.2MiB/s". */
export function formatBytesPerSecond(v: number | null): string {
  if (v === null) return '-';
  if (v < 1024) return `${Math.round(v)}B/s`;
  if (v < 1024 * 1024) return `${(v / 1024).toFixed(1)}KiB/s`;
  return `${(v / 1024 / 1024).toFixed(1)}MiB/s`;
}

export function formatCount(v: number | null): string {
  return v === null ? '-' : String(Math.round(v));
}
