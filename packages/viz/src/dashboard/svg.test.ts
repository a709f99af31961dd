import { describe, expect, it } from 'vitest';
import { edgeGraph, escapeXml, lineChart, sparkline, ticks } from './svg.js';

describe('sparkline', () => {
  it('draws one path through the values, breaking at gaps', () => {
    const svg = sparkline([0, 2, null, 4], { width: 30, height: 10 });
    expect(svg).toContain('<path d="M0,8L10,5M30,2"');
  });
  it('draws a flat grey line without data', () => {
    expect(sparkline([null, null])).toContain('stroke="#ccc"');
  });
});

describe('ticks', () => {
  it.each([
    [7, [0, 2, 4, 6, 8]],
    [0.9, [0, 0.25, 0.5, 0.75, 1]],
    [100, [0, 25, 50, 75, 100]],
    [0, [0, 1]],
  ])('%s → %j', (max, want) => expect(ticks(max)).toEqual(want));
});

describe('lineChart', () => {
  it('one path per series, y from 0, times as hh:mm, a legend', () => {
    const svg = lineChart(
      [
        {
          name: 'p50',
          color: '#111',
          points: [
            [0, 1],
            [60, 2],
            [120, null],
          ],
        },
        {
          name: 'p99',
          color: '#222',
          points: [
            [0, 5],
            [60, 7],
            [120, 8],
          ],
        },
      ],
      { title: 'Latency', unit: 'ms', width: 200, height: 100 },
    );
    expect(svg.match(/class="series"/g)).toHaveLength(2);
    expect(svg).toContain('data-series="p99"');
    expect(svg).toContain('>00:00<');
    expect(svg).toContain('>00:02<');
    expect(svg).toContain('>8ms<');
    expect(svg).not.toContain('no data yet');
    expect(lineChart([{ name: 'rps', color: '#000', points: [[0, null]] }], { title: 'RPS', unit: '' })).toContain(
      'no data yet',
    );
  });
});

describe('edgeGraph', () => {
  it('places callers left of callees and marks mTLS edges green, plaintext red with the reason', () => {
    const svg = edgeGraph([
      { src: 'client', srcNamespace: 'demo', dst: 'server', dstNamespace: 'demo', secured: true, msg: '' },
      { src: 'server', srcNamespace: 'demo', dst: 'db', dstNamespace: 'data', secured: false, msg: 'no_identity' },
    ]);
    expect(svg).toContain('class="edge secured" data-src="demo/client" data-dst="demo/server"');
    expect(svg).toContain('class="edge plaintext" data-src="demo/server" data-dst="data/db"');
    expect(svg).toContain('√ mTLS');
    expect(svg).toContain('× plaintext: no_identity');
    const x = (node: string) => Number(new RegExp(`data-node="${node}"><rect x="(\\d+)"`).exec(svg)?.[1]);
    expect(x('demo/client')).toBeLessThan(x('demo/server'));
    expect(x('demo/server')).toBeLessThan(x('data/db'));
  });
  it('survives a cycle and escapes names', () => {
    const svg = edgeGraph([
      { src: 'a', srcNamespace: 'n', dst: 'b', dstNamespace: 'n', secured: true, msg: '' },
      { src: 'b', srcNamespace: 'n', dst: 'a', dstNamespace: 'n', secured: true, msg: '' },
    ]);
    expect(svg.match(/class="node"/g)).toHaveLength(2);
    expect(escapeXml('<a & "b">')).toBe('&lt;a &amp; &quot;b&quot;&gt;');
  });
});
