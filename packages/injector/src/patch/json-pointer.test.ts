import { describe, expect, it } from 'vitest';
import { escapePointerToken, pointer, prefixPatch } from './json-pointer.js';

describe('json pointers', () => {
  it.each([
    ['minimesh.io/inject', 'minimesh.io~1inject'],
    ['a~b/c', 'a~0b~1c'],
    ['~1', '~01'],
    ['plain', 'plain'],
  ])('escapes %s as %s', (token, escaped) => {
    expect(escapePointerToken(token)).toBe(escaped);
  });

  it('joins tokens and prefixes patches for pod templates', () => {
    expect(pointer('metadata', 'annotations', 'config.minimesh.io/proxy-uid')).toBe(
      '/metadata/annotations/config.minimesh.io~1proxy-uid',
    );
    expect(pointer('spec', 'initContainers', 0)).toBe('/spec/initContainers/0');
    expect(prefixPatch([{ op: 'add', path: '/spec/volumes/-', value: 1 }], '/spec/template')).toEqual([
      { op: 'add', path: '/spec/template/spec/volumes/-', value: 1 },
    ]);
    expect(prefixPatch([{ op: 'remove', path: '/a' }], '')).toEqual([{ op: 'remove', path: '/a' }]);
  });
});
