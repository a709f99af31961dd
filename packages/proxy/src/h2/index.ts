// The proxy's own HTTP/2 engine, in layers: the wire codec (frames.ts: RFC 9113 frames; hpack.ts and
// huffman.ts: RFC 7541), header fields by RFC 9113's rules (fields.ts), the connection (session.ts),
// its streams (stream.ts), the server role (server.ts) that serves the proxy's HTTP/2 callers and the
// client role (client.ts) that carries its requests to HTTP/2 upstreams (peer proxies, HTTP/2 apps).
export { serveHttp2, H2ServerSession, ServerStream, type H2ServerOptions, type RespondOptions } from './server.js';
export { connectHttp2, H2ClientSession, ClientStream, type H2ClientOptions, type RequestOptions } from './client.js';
export { H2Session, type H2SessionOptions } from './session.js';
export { H2Stream } from './stream.js';
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
