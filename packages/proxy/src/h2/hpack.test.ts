// HPACK: the RFC 7541 Appendix C examples through the decoder (fields and dynamic table after every
// block) and the encoder (the same bytes, where the RFC's choices are the encoder's), the errors a
// decoder must find, never-indexed fields, and encoder -> decoder round trips with eviction and size
// updates.
import { describe, expect, it } from 'vitest';
import { HpackDecoder, HpackEncoder, HpackError } from './hpack.js';
import { huffmanEncode } from './huffman.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s/g, ''), 'hex');
const flat = (pairs: Array<[string, string]>): string[] => pairs.flat();

const REQUESTS: Array<Array<[string, string]>> = [
  [
    [':method', 'GET'],
    [':scheme', 'http'],
    [':path', '/'],
    [':authority', 'www.example.com'],
  ],
  [
    [':method', 'GET'],
    [':scheme', 'http'],
    [':path', '/'],
    [':authority', 'www.example.com'],
    ['cache-control', 'no-cache'],
  ],
  [
    [':method', 'GET'],
    [':scheme', 'https'],
    [':path', '/index.html'],
    [':authority', 'www.example.com'],
    ['custom-key', 'custom-value'],
  ],
];
const REQUEST_TABLES: Array<Array<[string, string]>> = [
  [[':authority', 'www.example.com']],
  [
    ['cache-control', 'no-cache'],
    [':authority', 'www.example.com'],
  ],
  [
    ['custom-key', 'custom-value'],
    ['cache-control', 'no-cache'],
    [':authority', 'www.example.com'],
  ],
];
const D1 = 'Mon, 21 Oct 2013 20:13:21 GMT';
const D2 = 'Mon, 21 Oct 2013 20:13:22 GMT';
const LOC = 'https://www.example.com';
const COOKIE = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1';
const RESPONSES: Array<Array<[string, string]>> = [
  [
    [':status', '302'],
    ['cache-control', 'private'],
    ['date', D1],
    ['location', LOC],
  ],
  [
    [':status', '307'],
    ['cache-control', 'private'],
    ['date', D1],
    ['location', LOC],
  ],
  [
    [':status', '200'],
    ['cache-control', 'private'],
    ['date', D2],
    ['location', LOC],
    ['content-encoding', 'gzip'],
    ['set-cookie', COOKIE],
  ],
];
const RESPONSE_TABLES: Array<Array<[string, string]>> = [
  [
    ['location', LOC],
    ['date', D1],
    ['cache-control', 'private'],
    [':status', '302'],
  ],
  [
    [':status', '307'],
    ['location', LOC],
    ['date', D1],
    ['cache-control', 'private'],
  ],
  [
    ['set-cookie', COOKIE],
    ['content-encoding', 'gzip'],
    ['date', D2],
  ],
];

interface Example {
  tableSize: number;
  huffman: boolean;
  blocks: string[];
  fields: Array<Array<[string, string]>>;
  tables: Array<Array<[string, string]>>;
  sizes: number[];
}
const EXAMPLES: Record<string, Example> = {
  'C.3': {
    tableSize: 4096,
    huffman: false,
    blocks: [
      '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      '8286 84be 5808 6e6f 2d63 6163 6865',
      '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65',
    ],
    fields: REQUESTS,
    tables: REQUEST_TABLES,
    sizes: [57, 110, 164],
  },
  'C.4': {
    tableSize: 4096,
    huffman: true,
    blocks: [
      '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff',
      '8286 84be 5886 a8eb 1064 9cbf',
      '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf',
    ],
    fields: REQUESTS,
    tables: REQUEST_TABLES,
    sizes: [57, 110, 164],
  },
  'C.5': {
    tableSize: 256,
    huffman: false,
    blocks: [
      '4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      '4803 3330 37c1 c0bf',
      '88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31',
    ],
    fields: RESPONSES,
    tables: RESPONSE_TABLES,
    sizes: [222, 222, 215],
  },
  'C.6': {
    tableSize: 256,
    huffman: true,
    blocks: [
      '4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3',
      '4883 640e ffc1 c0bf',
      '88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07',
    ],
    fields: RESPONSES,
    tables: RESPONSE_TABLES,
    sizes: [222, 222, 215],
  },
};

describe('HpackDecoder', () => {
  it('decodes RFC 7541 C.2.1-C.2.4 (single representations)', () => {
    let d = new HpackDecoder();
    expect(d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'))).toEqual([
      'custom-key',
      'custom-header',
    ]);
    expect(d.entries()).toEqual([['custom-key', 'custom-header']]);
    expect(d.tableSize).toBe(55);
    expect(d.neverIndexed).toEqual([]);

    d = new HpackDecoder();
    expect(d.decode(hex('040c 2f73 616d 706c 652f 7061 7468'))).toEqual([':path', '/sample/path']);
    expect(d.entries()).toEqual([]);

    d = new HpackDecoder();
    expect(d.decode(hex('1008 7061 7373 776f 7264 0673 6563 7265 74'))).toEqual(['password', 'secret']);
    expect(d.entries()).toEqual([]);
    expect(d.neverIndexed).toEqual([0]);

    d = new HpackDecoder();
    expect(d.decode(hex('82'))).toEqual([':method', 'GET']);
    expect(d.entries()).toEqual([]);
  });

  for (const [name, ex] of Object.entries(EXAMPLES)) {
    it(`decodes RFC 7541 ${name}: fields, then the dynamic table and its size after each block`, () => {
      const d = new HpackDecoder(ex.tableSize);
      ex.blocks.forEach((block, i) => {
        expect(d.decode(hex(block))).toEqual(flat(ex.fields[i]!));
        expect(d.entries()).toEqual(ex.tables[i]);
        expect(d.tableSize).toBe(ex.sizes[i]);
      });
    });
  }

  it('decodes a block inside a larger buffer and appends to the array given', () => {
    const b = hex('ffff 8286 ffff');
    const out = ['x', 'y'];
    expect(new HpackDecoder().decode(b, 2, 4, out)).toEqual(['x', 'y', ':method', 'GET', ':scheme', 'http']);
  });

  it('reports never-indexed fields by field number, with indexed names too', () => {
    // :method GET, then never-indexed authorization (static name 23), then never-indexed literal name
    const block = hex('82 1f08 0373 6563 10 01 78 01 79');
    const d = new HpackDecoder();
    expect(d.decode(block)).toEqual([':method', 'GET', 'authorization', 'sec', 'x', 'y']);
    expect(d.neverIndexed).toEqual([1, 2]);
    d.decode(hex('82'));
    expect(d.neverIndexed).toEqual([]);
  });

  const errors: Array<[string, string, RegExp]> = [
    ['index 0', '80', /index 0/],
    ['an index beyond the dynamic table', 'c6', /index 70 is beyond the dynamic table \(0 entries\)/],
    ['a name index beyond the dynamic table', '7f 01 01 61', /index 64 is beyond/],
    ['a size update above the SETTINGS limit', '3fe21f', /size update to 4097, above the limit 4096/],
    ['a size update after a field', '82 20', /size update after the start/],
    ['a truncated integer', 'ff', /integer truncated/],
    ['a truncated multi-octet integer', 'ff 80', /integer truncated/],
    ['an integer overflow', 'ff ffffffff0f', /overflows/],
    ['a long run of zero continuation octets', 'ff 8080808080808000', /overflows/],
    ['a missing string', '40', /string literal missing/],
    ['a truncated string', '40 05 61', /string of 5 octets truncated at 1/],
    ['a truncated value', '00 01 61 0a 6162', /string of 10 octets truncated at 2/],
    ['bad Huffman in a string', '00 81 00 01 61', /padding/],
  ];
  for (const [what, block, message] of errors) {
    it(`refuses ${what} (COMPRESSION_ERROR)`, () => {
      let err: unknown;
      try {
        new HpackDecoder().decode(hex(block));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(HpackError);
      expect((err as HpackError).code).toBe('COMPRESSION_ERROR');
      expect((err as HpackError).message).toMatch(message);
    });
  }

  it('takes size updates at the start of a block, two in a row, and evicts', () => {
    const d = new HpackDecoder();
    d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'));
    expect(d.tableSize).toBe(55);
    expect(d.decode(hex('20 3f11 82'))).toEqual([':method', 'GET']); // to 0, then to 48
    expect(d.entries()).toEqual([]);
    // an entry of 55 no longer fits a table of 48: it empties the table and is not added
    d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'));
    expect(d.entries()).toEqual([]);
    d.setMaxTableSize(32);
    expect(() => d.decode(hex('3f11'))).toThrow(/above the limit 32/);
  });

  it('requires a size update at the start of the block after the limit went down', () => {
    const d = new HpackDecoder();
    d.setMaxTableSize(100);
    expect(() => d.decode(hex('82'))).toThrow(/no dynamic table size update after the limit went down to 100/);
    const e = new HpackDecoder();
    e.setMaxTableSize(100);
    expect(e.decode(hex('3f45 82'))).toEqual([':method', 'GET']);
    expect(e.decode(hex('82'))).toEqual([':method', 'GET']);
    const f = new HpackDecoder(100);
    f.setMaxTableSize(4096); // going up needs no update
    expect(f.decode(hex('82'))).toEqual([':method', 'GET']);
  });

  it('reports an upper-case name as PROTOCOL_ERROR after keeping the table in step', () => {
    const d = new HpackDecoder();
    let err: unknown;
    try {
      d.decode(hex('82 40 03 466f6f 01 61 84'));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HpackError);
    expect((err as HpackError).code).toBe('PROTOCOL_ERROR');
    expect((err as HpackError).message).toMatch(/"Foo"/);
    expect(d.entries()).toEqual([['Foo', 'a']]);
    expect(() => d.decode(hex('be'))).toThrow(/"Foo"/); // and again when the entry is referred to
    expect(new HpackDecoder().decode(hex('00 03 666f6f 01 41'))).toEqual(['foo', 'A']); // values may
  });
});

describe('HpackEncoder', () => {
  for (const [name, ex] of Object.entries(EXAMPLES)) {
    it(`encodes RFC 7541 ${name} as the RFC does`, () => {
      const e = new HpackEncoder({ maxTableSize: ex.tableSize, huffman: ex.huffman });
      ex.fields.forEach((fields, i) => {
        expect(e.encode(flat(fields)).toString('hex')).toBe(ex.blocks[i]!.replace(/\s/g, ''));
        expect(e.entries()).toEqual(ex.tables[i]);
      });
    });
  }

  it('sends never-indexed what the caller marks and authorization, and does not index them', () => {
    const e = new HpackEncoder({ huffman: false });
    const block = e.encode(['password', 'secret', 'authorization', 'x', 'a', 'b'], [0]);
    expect(block.toString('hex')).toBe(
      '10 08 70617373776f7264 06 736563726574 1f08 01 78 40 01 61 01 62'.replace(/ /g, ''),
    );
    expect(e.entries()).toEqual([['a', 'b']]);
    const d = new HpackDecoder();
    expect(d.decode(block)).toEqual(['password', 'secret', 'authorization', 'x', 'a', 'b']);
    expect(d.neverIndexed).toEqual([0, 1]);
    // a sensitive field that is in the static table is still sent never-indexed
    expect(e.encode([':method', 'GET'], [0]).toString('hex')).toBe('1203474554');
  });

  it('uses Huffman only when not longer', () => {
    const e = new HpackEncoder();
    // "x-raw" is 4 octets in Huffman; "\x00\x01" is 13 + 23 bits: raw is shorter
    const name = huffmanEncode('x-raw').toString('hex');
    expect(e.encode(['x-raw', '\x00\x01'], [0]).toString('hex')).toBe('10' + '84' + name + '02' + '0001');
  });

  it('emits the smallest and the last size set since the previous block, then only once', () => {
    const e = new HpackEncoder();
    e.encode(['x-a', 'one']);
    expect(e.entries()).toEqual([['x-a', 'one']]);
    e.setMaxTableSize(50);
    e.setMaxTableSize(20);
    e.setMaxTableSize(80);
    expect(e.entries()).toEqual([]); // 20 evicted everything
    expect(e.encode([':method', 'GET']).toString('hex')).toBe('34' + '3f31' + '82');
    expect(e.encode([':method', 'GET']).toString('hex')).toBe('82');
    e.setMaxTableSize(100);
    expect(e.encode([]).toString('hex')).toBe('3f45');
  });

  it('does not index per-request values or entries too large for the table', () => {
    const e = new HpackEncoder({ maxTableSize: 256 });
    e.encode([':path', '/a/b?c=1', 'content-length', '12', 'x-big', 'v'.repeat(100), 'x-small', 'v']);
    expect(e.entries()).toEqual([['x-small', 'v']]);
  });
});

/** A seeded generator, so that a failure can be reproduced. */
function random(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return Math.floor((s / 0x80000000) * n);
  };
}

describe('HpackEncoder -> HpackDecoder', () => {
  it('round-trips many blocks, with eviction, size updates and never-indexed fields', () => {
    const rnd = random(42);
    const names = [':method', ':path', ':authority', 'user-agent', 'accept', 'x-trace', 'cookie', 'x-long', 'x-r'];
    const values = ['GET', 'POST', '/', '/api/v1/items', 'example.com', 'gzip', 'a=b; c=d', '', '\u00e9\u00ff\u0001'];
    const enc = new HpackEncoder({ maxTableSize: 4096 });
    const dec = new HpackDecoder(4096);
    const sizes = [4096, 300, 0, 64, 1000, 4096];
    for (let block = 0; block < 600; block++) {
      if (block % 100 === 99) enc.setMaxTableSize(sizes[(block + 1) / 100]!);
      const fields: string[] = [];
      const never: number[] = [];
      const count = 1 + rnd(12);
      for (let f = 0; f < count; f++) {
        const name = names[rnd(names.length)]!;
        let value = values[rnd(values.length)]!;
        if (name === 'x-long') value = 'L'.repeat(rnd(3000));
        if (name === 'x-r') value = String(rnd(1e9));
        if (rnd(20) === 0) never.push(f);
        fields.push(name, value);
      }
      const bytes = enc.encode(fields, never);
      expect(dec.decode(bytes)).toEqual(fields);
      expect(dec.neverIndexed).toEqual(expect.arrayContaining(never));
      expect(dec.entries()).toEqual(enc.entries());
    }
  });

  it('sends a repeated request as one octet per field once its fields are in the table', () => {
    const fields = [':method', 'POST', ':scheme', 'https', ':authority', 'api.example.com', ':path', '/'];
    fields.push('user-agent', 'grpc-node/1.14', 'content-type', 'application/grpc', 'te', 'trailers');
    const enc = new HpackEncoder();
    const dec = new HpackDecoder();
    expect(dec.decode(enc.encode(fields))).toEqual(fields);
    const again = enc.encode(fields);
    expect(again.length).toBe(fields.length / 2);
    expect(dec.decode(again)).toEqual(fields);
  });
});
