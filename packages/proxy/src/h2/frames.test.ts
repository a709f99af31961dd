// The HTTP/2 frame layer: the frame header both ways, each builder's bytes, and the FrameReader on
// chunks split anywhere (one octet at a time included), with the padding, priority and size rules.
import { describe, expect, it } from 'vitest';
import {
  CLIENT_PREFACE,
  ErrorCode,
  Flag,
  FrameError,
  FrameReader,
  FrameType,
  Setting,
  dataFrame,
  frame,
  goawayFrame,
  headersFrames,
  parseSettings,
  pingFrame,
  readFrameHeader,
  rstStreamFrame,
  settingsAckFrame,
  settingsFrame,
  windowUpdateFrame,
  writeFrameHeader,
  type Frame,
  type FrameReaderOptions,
} from './frames.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s/g, ''), 'hex');

/** The frames `reader` yields for `chunks`, as plain objects. */
function read(chunks: Buffer[], opts?: FrameReaderOptions): Array<Omit<Frame, 'payload'> & { payload: string }> {
  const out: Array<Omit<Frame, 'payload'> & { payload: string }> = [];
  const reader = new FrameReader((f) => out.push({ ...f, payload: f.payload.toString('hex') }), opts);
  for (const c of chunks) reader.push(c);
  return out;
}

/** The FrameError that reading `bytes` throws. */
function failure(bytes: Buffer, opts?: FrameReaderOptions): FrameError {
  try {
    read([bytes], opts);
  } catch (e) {
    if (e instanceof FrameError) return e;
    throw e;
  }
  throw new Error('no FrameError');
}

describe('frame header', () => {
  it('writes and reads the 9 octets, dropping the reserved bit', () => {
    const b = Buffer.alloc(9);
    writeFrameHeader(b, 0, 0x123456, FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 0x7fffffff);
    expect(b.toString('hex')).toBe('12345601057fffffff');
    expect(readFrameHeader(b, 0)).toEqual({ length: 0x123456, type: 1, flags: 5, streamId: 0x7fffffff });
    expect(readFrameHeader(hex('000000 00 00 80000003'), 0).streamId).toBe(3);
  });
});

describe('frame builders', () => {
  it('build the RFC 9113 wire bytes of each frame', () => {
    expect(dataFrame(1, Buffer.from('hi'), true).toString('hex')).toBe('000002000100000001' + '6869');
    expect(dataFrame(3, Buffer.alloc(0)).toString('hex')).toBe('000000000000000003');
    expect(rstStreamFrame(5, ErrorCode.CANCEL).toString('hex')).toBe('000004030000000005' + '00000008');
    const settings = settingsFrame([
      [Setting.HEADER_TABLE_SIZE, 0],
      [Setting.INITIAL_WINDOW_SIZE, 1 << 20],
    ]);
    expect(settings.toString('hex')).toBe('00000c040000000000' + '000100000000' + '000400100000');
    expect(parseSettings(settings.subarray(9))).toEqual([
      [1, 0],
      [4, 1 << 20],
    ]);
    expect(settingsAckFrame().toString('hex')).toBe('000000040100000000');
    expect(pingFrame(hex('0102030405060708'), true).toString('hex')).toBe('000008060100000000' + '0102030405060708');
    expect(() => pingFrame(hex('01'))).toThrow(RangeError);
    expect(goawayFrame(7, ErrorCode.PROTOCOL_ERROR, Buffer.from('x')).toString('hex')).toBe(
      '000009070000000000' + '00000007' + '00000001' + '78',
    );
    expect(windowUpdateFrame(0, 0x10000).toString('hex')).toBe('000004080000000000' + '00010000');
    expect(frame(0xfa, 0, 1).toString('hex')).toBe('000000fa0000000001');
  });

  it('split a header block into HEADERS and CONTINUATIONs at the max frame size', () => {
    const block = Buffer.from('abcdefghij');
    expect(headersFrames(1, block, true).toString('hex')).toBe('00000a010500000001' + block.toString('hex'));
    const split = headersFrames(3, block, true, 4);
    expect(read([split])).toEqual([
      { type: FrameType.HEADERS, flags: Flag.END_STREAM, streamId: 3, payload: '61626364', length: 4 },
      { type: FrameType.CONTINUATION, flags: 0, streamId: 3, payload: '65666768', length: 4 },
      { type: FrameType.CONTINUATION, flags: Flag.END_HEADERS, streamId: 3, payload: '696a', length: 2 },
    ]);
    expect(read([headersFrames(5, Buffer.alloc(0))])).toEqual([
      { type: FrameType.HEADERS, flags: Flag.END_HEADERS, streamId: 5, payload: '', length: 0 },
    ]);
    expect(read([headersFrames(5, block, false, 5)]).map((f) => f.type)).toEqual([1, 9]);
  });
});

describe('FrameReader', () => {
  const stream = Buffer.concat([
    settingsFrame([[Setting.MAX_FRAME_SIZE, 16384]]),
    headersFrames(1, Buffer.from('header block'), false, 5),
    dataFrame(1, Buffer.alloc(16384, 0x61)),
    frame(FrameType.DATA, Flag.PADDED | Flag.END_STREAM, 1, hex('03 6869 000000')),
    pingFrame(hex('0001020304050607')),
    frame(FrameType.HEADERS, Flag.PADDED | Flag.PRIORITY | Flag.END_HEADERS, 3, hex('02 80000001ff 82 0000')),
    frame(FrameType.HEADERS, Flag.PRIORITY | Flag.END_HEADERS, 5, hex('0000000110 8284')),
    windowUpdateFrame(0, 1000),
    rstStreamFrame(3, ErrorCode.CANCEL),
    goawayFrame(5, ErrorCode.NO_ERROR),
  ]);
  const whole = read([stream]);

  it('yields every frame, padding and priority removed', () => {
    expect(whole.map((f) => [f.type, f.flags, f.streamId, f.length])).toEqual([
      [FrameType.SETTINGS, 0, 0, 6],
      [FrameType.HEADERS, 0, 1, 5],
      [FrameType.CONTINUATION, 0, 1, 5],
      [FrameType.CONTINUATION, Flag.END_HEADERS, 1, 2],
      [FrameType.DATA, 0, 1, 16384],
      [FrameType.DATA, Flag.PADDED | Flag.END_STREAM, 1, 6],
      [FrameType.PING, 0, 0, 8],
      [FrameType.HEADERS, Flag.PADDED | Flag.PRIORITY | Flag.END_HEADERS, 3, 9],
      [FrameType.HEADERS, Flag.PRIORITY | Flag.END_HEADERS, 5, 7],
      [FrameType.WINDOW_UPDATE, 0, 0, 4],
      [FrameType.RST_STREAM, 0, 3, 4],
      [FrameType.GOAWAY, 0, 0, 8],
    ]);
    expect(
      Buffer.from(
        whole
          .slice(1, 4)
          .map((f) => f.payload)
          .join(''),
        'hex',
      ).toString(),
    ).toBe('header block');
    expect(whole[4]!.payload).toBe('61'.repeat(16384));
    expect(whole[5]!.payload).toBe('6869');
    expect(whole[7]!.payload).toBe('82');
    expect(whole[8]!.payload).toBe('8284');
  });

  it('yields the same frames whatever the chunks: one octet at a time, and random splits', () => {
    const small = stream.subarray(0, 200); // the one-octet case without the 16 KiB DATA frame
    const singles: Buffer[] = [];
    for (let i = 0; i < small.length; i++) singles.push(small.subarray(i, i + 1));
    expect(read(singles)).toEqual(read([small]));
    expect(read(singles).length).toBeGreaterThan(3);

    let s = 1;
    for (let round = 0; round < 50; round++) {
      const chunks: Buffer[] = [];
      for (let off = 0; off < stream.length;) {
        s = (s * 1103515245 + 12345) & 0x7fffffff;
        const n = 1 + (s % (round % 2 ? 20 : 5000));
        chunks.push(stream.subarray(off, off + n));
        off += n;
      }
      expect(read(chunks)).toEqual(whole);
    }
  });

  it('checks the client preface first when told to, in any split', () => {
    const bytes = Buffer.concat([CLIENT_PREFACE, settingsAckFrame()]);
    const chunks = [bytes.subarray(0, 3), bytes.subarray(3, 25), bytes.subarray(25)];
    expect(read(chunks, { preface: true })).toEqual([
      { type: FrameType.SETTINGS, flags: Flag.ACK, streamId: 0, payload: '', length: 0 },
    ]);
    const bad = failure(Buffer.concat([Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), settingsAckFrame()]), {
      preface: true,
    });
    expect(bad.codeName).toBe('PROTOCOL_ERROR');
    expect(bad.code).toBe(ErrorCode.PROTOCOL_ERROR);
  });

  it('refuses a frame longer than its max frame size as soon as the header is in', () => {
    const header = Buffer.alloc(9);
    writeFrameHeader(header, 0, 16385, FrameType.DATA, 0, 1);
    const err = failure(header);
    expect(err.codeName).toBe('FRAME_SIZE_ERROR');
    expect(err.code).toBe(ErrorCode.FRAME_SIZE_ERROR);
    expect(err.message).toMatch(/16385 octets, above the maximum 16384/);
    expect(read([dataFrame(1, Buffer.alloc(20000))], { maxFrameSize: 20000 })[0]!.length).toBe(20000);
    expect(failure(dataFrame(1, Buffer.alloc(101)), { maxFrameSize: 100 }).codeName).toBe('FRAME_SIZE_ERROR');
  });

  const bad: Array<[string, Buffer, string]> = [
    ['DATA padding as long as the payload', frame(FrameType.DATA, Flag.PADDED, 1, hex('04 616161')), 'PROTOCOL_ERROR'],
    ['HEADERS padding past the end', frame(FrameType.HEADERS, Flag.PADDED, 1, hex('ff 82')), 'PROTOCOL_ERROR'],
    [
      'padding eating the priority fields',
      frame(FrameType.HEADERS, Flag.PADDED | Flag.PRIORITY, 1, hex('02 0000000110 82')),
      'PROTOCOL_ERROR',
    ],
    ['PADDED without a pad length', frame(FrameType.DATA, Flag.PADDED, 1), 'FRAME_SIZE_ERROR'],
    ['PRIORITY fields cut short', frame(FrameType.HEADERS, Flag.PRIORITY, 1, hex('00000001')), 'FRAME_SIZE_ERROR'],
    ['PING of 7 octets', frame(FrameType.PING, 0, 0, hex('00000000000000')), 'FRAME_SIZE_ERROR'],
    ['WINDOW_UPDATE of 5 octets', frame(FrameType.WINDOW_UPDATE, 0, 0, hex('0000000100')), 'FRAME_SIZE_ERROR'],
    ['RST_STREAM of 3 octets', frame(FrameType.RST_STREAM, 0, 1, hex('000000')), 'FRAME_SIZE_ERROR'],
    ['SETTINGS of 5 octets', frame(FrameType.SETTINGS, 0, 0, hex('0001000000')), 'FRAME_SIZE_ERROR'],
    ['a SETTINGS ack with a payload', frame(FrameType.SETTINGS, Flag.ACK, 0, hex('000100000000')), 'FRAME_SIZE_ERROR'],
    ['GOAWAY of 7 octets', frame(FrameType.GOAWAY, 0, 0, hex('00000000000000')), 'FRAME_SIZE_ERROR'],
  ];
  for (const [what, bytes, code] of bad) {
    it(`refuses ${what} (${code})`, () => {
      expect(failure(bytes).codeName).toBe(code);
    });
  }

  it('accepts padding that leaves an empty payload, and unknown frame types as they are', () => {
    expect(read([frame(FrameType.DATA, Flag.PADDED, 1, hex('02 0000'))])[0]).toMatchObject({ payload: '', length: 3 });
    expect(read([frame(FrameType.DATA, Flag.PADDED, 1, hex('03 616161'))])[0]).toMatchObject({
      payload: '',
      length: 4,
    });
    expect(read([frame(0xbe, 0xff, 9, hex('0102'))])[0]).toEqual({
      type: 0xbe,
      flags: 0xff,
      streamId: 9,
      payload: '0102',
      length: 2,
    });
  });
});
