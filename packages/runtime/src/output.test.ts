import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { outputFlag, parseOutputFormat, renderData, renderRecord } from './output.js';
import { UsageError } from './flags.js';

describe('-o', () => {
  it('defaults to the first allowed format and accepts the others', () => {
    expect(parseOutputFormat('cmd', '')).toBe('table');
    expect(parseOutputFormat('cmd', '', ['json', 'yaml'])).toBe('json');
    for (const f of ['table', 'wide', 'json', 'yaml'] as const) expect(parseOutputFormat('cmd', f)).toBe(f);
  });

  it('refuses a format the command does not have, naming the ones it has (exit 2)', () => {
    expect(() => parseOutputFormat('minimesh version', 'wide', ['table', 'json', 'yaml'])).toThrow(
      'minimesh version: -o "wide" is not valid: expected table, json, yaml',
    );
    expect(() => parseOutputFormat('cmd', 'xml')).toThrow(UsageError);
  });

  it('renders JSON and YAML of the same value', () => {
    const v = { results: [{ status: 'ok', detail: 'a: b # not a comment' }], ok: true, n: 3, none: null };
    expect(JSON.parse(renderData('json', v))).toEqual(v);
    const y = renderData('yaml', v);
    expect(y).toMatch(/^results:\n {2}- status: ok\n/);
    expect(parse(y)).toEqual(v);
    expect(y.endsWith('\n')).toBe(true);
  });

  it('streams records as JSON lines or YAML documents', () => {
    const a = { method: 'GET', path: '/a' };
    const b = { method: 'POST', path: '/b' };
    expect(renderRecord('json', a) + renderRecord('json', b)).toBe(
      '{"method":"GET","path":"/a"}\n{"method":"POST","path":"/b"}\n',
    );
    const docs = parseAllDocuments(renderRecord('yaml', a) + renderRecord('yaml', b)).map((d) => d.toJS());
    expect(docs).toEqual([a, b]);
  });

  it('describes itself in --help', () => {
    expect(outputFlag(['table', 'json', 'yaml']).description).toBe('output format: table, json, yaml (default: table)');
  });
});
