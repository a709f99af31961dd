// The HTTP/2 wire codec (RFC 9113 frames, RFC 7541 HPACK): the first layer of the proxy's own HTTP/2
// engine. Nothing in the request path uses it yet.
export { HpackDecoder, HpackEncoder, HpackError, STATIC_TABLE, type HpackEncoderOptions } from './hpack.js';
export { huffmanDecode, huffmanEncode, huffmanEncodeInto, huffmanLength } from './huffman.js';
export {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_SIZE,
  ErrorCode,
  Flag,
  FRAME_HEADER_LENGTH,
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
  type ErrorCodeName,
  type Frame,
  type FrameHeader,
  type FrameReaderOptions,
} from './frames.js';
