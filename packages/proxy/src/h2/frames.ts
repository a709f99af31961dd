// The HTTP/2 frame layer (RFC 9113 sections 4 and 6): the constants of the wire, the 9-byte frame
// header, builders of each frame's bytes, and a FrameReader that cuts socket chunks into frames. It
// knows frames, not streams or connections: what a frame means is the caller's business.

/** The client connection preface (RFC 9113 3.4). */
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;
export type ErrorCodeName = keyof typeof ErrorCode;

export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** The default and the smallest SETTINGS_MAX_FRAME_SIZE. */
export const DEFAULT_MAX_FRAME_SIZE = 16384;
export const FRAME_HEADER_LENGTH = 9;

/** A frame header (RFC 9113 4.1). */
export interface FrameHeader {
  length: number;
  type: number;
  flags: number;
  streamId: number;
}

/** A frame as FrameReader yields it. */
export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  /** The payload (a view into the chunk read), without padding and, for HEADERS, priority fields. */
  payload: Buffer;
  /** The payload's length on the wire, padding included (what DATA counts against flow control). */
  length: number;
}

/** A connection error found reading frames; `code` is the RFC 9113 error code to send in GOAWAY. */
export class FrameError extends Error {
  readonly code: number;
  constructor(
    readonly codeName: ErrorCodeName,
    message: string,
  ) {
    super(`HTTP/2 ${codeName}: ${message}`);
    this.name = 'FrameError';
    this.code = ErrorCode[codeName];
  }
}

/** Writes a frame header at `off` of `out`. */
export function writeFrameHeader(
  out: Uint8Array,
  off: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): void {
  out[off] = length >>> 16;
  out[off + 1] = (length >>> 8) & 255;
  out[off + 2] = length & 255;
  out[off + 3] = type;
  out[off + 4] = flags;
  out[off + 5] = (streamId >>> 24) & 0x7f;
  out[off + 6] = (streamId >>> 16) & 255;
  out[off + 7] = (streamId >>> 8) & 255;
  out[off + 8] = streamId & 255;
}

/** Reads the frame header at `off` of `buf` (the reserved bit of the stream id dropped). */
export function readFrameHeader(buf: Uint8Array, off: number): FrameHeader {
  return {
    length: (buf[off]! << 16) | (buf[off + 1]! << 8) | buf[off + 2]!,
    type: buf[off + 3]!,
    flags: buf[off + 4]!,
    streamId: ((buf[off + 5]! & 0x7f) << 24) | (buf[off + 6]! << 16) | (buf[off + 7]! << 8) | buf[off + 8]!,
  };
}

/** A frame of `length` octets with its header written and its payload left to fill. */
function alloc(type: number, flags: number, streamId: number, length: number): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + length);
  writeFrameHeader(out, 0, length, type, flags, streamId);
  return out;
}

/** A frame's bytes: header and payload. */
export function frame(type: number, flags: number, streamId: number, payload?: Uint8Array): Buffer {
  const out = alloc(type, flags, streamId, payload === undefined ? 0 : payload.length);
  if (payload !== undefined) out.set(payload, FRAME_HEADER_LENGTH);
  return out;
}

/** A DATA frame; `data` must fit the peer's max frame size. */
export function dataFrame(streamId: number, data: Uint8Array, endStream = false): Buffer {
  return frame(FrameType.DATA, endStream ? Flag.END_STREAM : 0, streamId, data);
}

/** A header block as HEADERS and as many CONTINUATION frames as `maxFrameSize` needs, in one buffer. */
export function headersFrames(
  streamId: number,
  block: Uint8Array,
  endStream = false,
  maxFrameSize = DEFAULT_MAX_FRAME_SIZE,
): Buffer {
  const count = Math.max(1, Math.ceil(block.length / maxFrameSize));
  const out = Buffer.allocUnsafe(count * FRAME_HEADER_LENGTH + block.length);
  let off = 0;
  for (let i = 0; i < count; i++) {
    const start = i * maxFrameSize;
    const end = Math.min(block.length, start + maxFrameSize);
    const flags = (i === count - 1 ? Flag.END_HEADERS : 0) | (i === 0 && endStream ? Flag.END_STREAM : 0);
    writeFrameHeader(out, off, end - start, i === 0 ? FrameType.HEADERS : FrameType.CONTINUATION, flags, streamId);
    out.set(block.subarray(start, end), off + FRAME_HEADER_LENGTH);
    off += FRAME_HEADER_LENGTH + end - start;
  }
  return out;
}

export function rstStreamFrame(streamId: number, code: number): Buffer {
  const out = alloc(FrameType.RST_STREAM, 0, streamId, 4);
  out.writeUInt32BE(code, FRAME_HEADER_LENGTH);
  return out;
}

/** A SETTINGS frame with `settings` ([id, value] pairs, in order). */
export function settingsFrame(settings: ReadonlyArray<readonly [number, number]>): Buffer {
  const out = alloc(FrameType.SETTINGS, 0, 0, settings.length * 6);
  let off = FRAME_HEADER_LENGTH;
  for (const [id, value] of settings) {
    out.writeUInt16BE(id, off);
    out.writeUInt32BE(value, off + 2);
    off += 6;
  }
  return out;
}

export function settingsAckFrame(): Buffer {
  return frame(FrameType.SETTINGS, Flag.ACK, 0);
}

/** The [id, value] pairs of a SETTINGS payload (its length already checked by FrameReader). */
export function parseSettings(payload: Buffer): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let off = 0; off + 6 <= payload.length; off += 6) {
    out.push([payload.readUInt16BE(off), payload.readUInt32BE(off + 2)]);
  }
  return out;
}

/** A PING frame; `data` is the 8 octets of opaque data. */
export function pingFrame(data: Uint8Array, ack = false): Buffer {
  if (data.length !== 8) throw new RangeError('PING data must be 8 octets');
  return frame(FrameType.PING, ack ? Flag.ACK : 0, 0, data);
}

export function goawayFrame(lastStreamId: number, code: number, debug?: Uint8Array): Buffer {
  const out = alloc(FrameType.GOAWAY, 0, 0, 8 + (debug === undefined ? 0 : debug.length));
  out.writeUInt32BE(lastStreamId & 0x7fffffff, FRAME_HEADER_LENGTH);
  out.writeUInt32BE(code, FRAME_HEADER_LENGTH + 4);
  if (debug !== undefined) out.set(debug, FRAME_HEADER_LENGTH + 8);
  return out;
}

export function windowUpdateFrame(streamId: number, increment: number): Buffer {
  const out = alloc(FrameType.WINDOW_UPDATE, 0, streamId, 4);
  out.writeUInt32BE(increment & 0x7fffffff, FRAME_HEADER_LENGTH);
  return out;
}

/** Payload lengths fixed by RFC 9113 whose violation is a connection error (FRAME_SIZE_ERROR). */
const FIXED_LENGTH: Partial<Record<number, number>> = {
  [FrameType.RST_STREAM]: 4,
  [FrameType.PING]: 8,
  [FrameType.WINDOW_UPDATE]: 4,
};

export interface FrameReaderOptions {
  /** The SETTINGS_MAX_FRAME_SIZE this endpoint advertised (default 16384). */
  maxFrameSize?: number;
  /** Expect the client connection preface first (a server's reader). */
  preface?: boolean;
}

/**
 * Cuts the bytes of a connection, in chunks split anywhere, into frames for `onFrame`. A frame is
 * copied only if it spans chunks. `push` throws FrameError on a connection error; the reader is then done.
 */
export class FrameReader {
  /** The largest payload accepted (the SETTINGS_MAX_FRAME_SIZE advertised); may change between pushes. */
  maxFrameSize: number;
  private preface: boolean;
  /** Bytes received but not yet a whole frame (or preface), and how many bytes are needed before cutting. */
  private pending: Buffer[] = [];
  private pendingLength = 0;
  private need: number;

  constructor(
    private readonly onFrame: (frame: Frame) => void,
    opts: FrameReaderOptions = {},
  ) {
    this.maxFrameSize = opts.maxFrameSize ?? DEFAULT_MAX_FRAME_SIZE;
    this.preface = opts.preface ?? false;
    this.need = this.preface ? CLIENT_PREFACE.length : FRAME_HEADER_LENGTH;
  }

  push(chunk: Buffer): void {
    let buf = chunk;
    if (this.pendingLength > 0) {
      this.pending.push(chunk);
      this.pendingLength += chunk.length;
      if (this.pendingLength < this.need) return;
      buf = Buffer.concat(this.pending, this.pendingLength);
      this.pending = [];
      this.pendingLength = 0;
    }
    let off = 0;
    if (this.preface) {
      if (buf.length < CLIENT_PREFACE.length) return this.keep(buf, CLIENT_PREFACE.length);
      if (!CLIENT_PREFACE.equals(buf.subarray(0, CLIENT_PREFACE.length))) {
        throw new FrameError('PROTOCOL_ERROR', 'the connection does not start with the client preface');
      }
      this.preface = false;
      off = CLIENT_PREFACE.length;
    }
    while (buf.length - off >= FRAME_HEADER_LENGTH) {
      const length = (buf[off]! << 16) | (buf[off + 1]! << 8) | buf[off + 2]!;
      if (length > this.maxFrameSize) {
        throw new FrameError('FRAME_SIZE_ERROR', `frame of ${length} octets, above the maximum ${this.maxFrameSize}`);
      }
      const end = off + FRAME_HEADER_LENGTH + length;
      if (end > buf.length) return this.keep(buf.subarray(off), end - off);
      const type = buf[off + 3]!;
      const flags = buf[off + 4]!;
      const streamId = ((buf[off + 5]! & 0x7f) << 24) | (buf[off + 6]! << 16) | (buf[off + 7]! << 8) | buf[off + 8]!;
      this.onFrame(this.cut(type, flags, streamId, buf, off + FRAME_HEADER_LENGTH, end));
      off = end;
    }
    if (off < buf.length) this.keep(buf.subarray(off), FRAME_HEADER_LENGTH);
    else this.need = FRAME_HEADER_LENGTH;
  }

  private keep(rest: Buffer, need: number): void {
    this.pending = [rest];
    this.pendingLength = rest.length;
    this.need = need;
  }

  /** The frame in `buf[start, end)`, padding and priority removed, fixed lengths checked. */
  private cut(type: number, flags: number, streamId: number, buf: Buffer, start: number, end: number): Frame {
    const length = end - start;
    if (type === FrameType.DATA || type === FrameType.HEADERS) {
      let from = start;
      let pad = 0;
      if (flags & Flag.PADDED) {
        if (length < 1) throw new FrameError('FRAME_SIZE_ERROR', 'a padded frame without a pad length');
        pad = buf[from++]!;
      }
      if (type === FrameType.HEADERS && flags & Flag.PRIORITY) {
        if (end - from < 5) throw new FrameError('FRAME_SIZE_ERROR', 'HEADERS too short for its priority fields');
        from += 5;
      }
      const to = end - pad;
      if (to < from) throw new FrameError('PROTOCOL_ERROR', `padding of ${pad} octets in a payload of ${length}`);
      return { type, flags, streamId, payload: buf.subarray(from, to), length };
    }
    const fixed = FIXED_LENGTH[type];
    if (fixed !== undefined && length !== fixed) {
      throw new FrameError('FRAME_SIZE_ERROR', `frame type ${type} with a payload of ${length} octets, not ${fixed}`);
    }
    if (type === FrameType.SETTINGS && (length % 6 !== 0 || (flags & Flag.ACK && length !== 0))) {
      throw new FrameError('FRAME_SIZE_ERROR', `SETTINGS with a payload of ${length} octets`);
    }
    if (type === FrameType.GOAWAY && length < 8) {
      throw new FrameError('FRAME_SIZE_ERROR', `GOAWAY with a payload of ${length} octets`);
    }
    return { type, flags, streamId, payload: buf.subarray(start, end), length };
  }
}
