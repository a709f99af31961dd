import { describe, expect, it } from 'vitest';
import { formatBytesPerSecond, formatMs, formatPercent, formatRps, renderTable } from './table.js';

describe('renderTable', () => {
  it('pads columns, right-aligns figures and trims trailing space', () => {
    const out = renderTable(
      [
        { header: 'NAME' },
        { header: 'MESHED', align: 'right' },
        { header: 'SUCCESS', align: 'right' },
        { header: 'X' },
      ],
      [
        ['web', '1/1', '100.00%', ''],
        ['client-long', '2/3', '-', 'y'],
      ],
    );
    expect(out).toBe(
      [
        'NAME          MESHED   SUCCESS   X',
        'web              1/1   100.00%',
        'client-long      2/3         -   y',
        '',
      ].join('\n'),
    );
  });
});

describe('formats', () => {
  it.each([
    [1, '100.00%'],
    [0.98765, '98.77%'],
    [null, '-'],
  ])('percent %s → %s', (v, s) => expect(formatPercent(v)).toBe(s));
  it.each([
    [1.93, '1.9rps'],
    [0.01, '0.01rps'],
    [0, '0.0rps'],
    [null, '-'],
  ])('rps %s → %s', (v, s) => expect(formatRps(v)).toBe(s));
  it.each([
    [0.84, '0.8ms'],
    [1, '1ms'],
    [2.5, '2.5ms'],
    [12.4, '12ms'],
    [null, '-'],
  ])('ms %s → %s', (v, s) => expect(formatMs(v)).toBe(s));
  it.each([
    [512, '512B/s'],
    [1536, '1.5KiB/s'],
    [3.2 * 1024 * 1024, '3.2MiB/s'],
  ])('bytes %s → %s', (v, s) => expect(formatBytesPerSecond(v)).toBe(s));
});
