// The codec against node:http2 (nghttp2) on loopback: a raw server made of FrameReader, HpackDecoder
// and HpackEncoder answering a node:http2 client, and a raw client made of the frame builders and
// HpackEncoder asking a node:http2 server. Each side must see exactly the fields the other sent,
// through nghttp2's dynamic table, Huffman strings, CONTINUATION frames and table size updates.
import {
  connect,
  createServer as createH2Server,
  sensitiveHeaders,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { afterTest, dial, listen, until } from '../../test/support/loopback.js';
import {
  CLIENT_PREFACE,
  Flag,
  FrameReader,
  FrameType,
  HpackDecoder,
  HpackEncoder,
  Setting,
  headersFrames,
  settingsAckFrame,
  settingsFrame,
  type Frame,
} from './index.js';

/** Pairs of a flat field list, sorted (node:http2 orders pseudo-headers its own way). */
function pairs(fields: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < fields.length; i += 2) out.push(`${fields[i]}: ${fields[i + 1]}`);
  return out.sort();
}

/** Calls `onBlock` with each whole header block (HEADERS and its CONTINUATIONs) of the frames it is given. */
function headerBlocks(onBlock: (streamId: number, block: Buffer) => void): (f: Frame) => boolean {
  let parts: Buffer[] = [];
  let streamId = 0;
  return (f) => {
    if (f.type !== FrameType.HEADERS && f.type !== FrameType.CONTINUATION) return false;
    if (f.type === FrameType.HEADERS) streamId = f.streamId;
    parts.push(Buffer.from(f.payload));
    if (f.flags & Flag.END_HEADERS) {
      onBlock(streamId, Buffer.concat(parts));
      parts = [];
    }
    return true;
  };
}

describe('HTTP/2 wire codec with node:http2', () => {
  it('decodes what a node:http2 client sends, and answers it', async () => {
    const blocks: Array<{ fields: string[]; size: number }> = [];
    const decoder = new HpackDecoder();
    const tcp = createServer((s: Socket) => {
      afterTest(() => s.destroy());
      s.on('error', () => undefined);
      const encoder = new HpackEncoder();
      const onHeaders = headerBlocks((streamId, block) => {
        blocks.push({ fields: decoder.decode(block), size: block.length });
        const answer = [':status', '200', 'x-request', String(blocks.length), 'x-long', 'a'.repeat(blocks.length)];
        s.write(headersFrames(streamId, encoder.encode(answer), true));
      });
      const reader = new FrameReader(
        (f) => {
          if (onHeaders(f)) return;
          if (f.type === FrameType.SETTINGS && !(f.flags & Flag.ACK)) s.write(settingsAckFrame());
        },
        { preface: true },
      );
      s.write(settingsFrame([]));
      s.on('data', (chunk: Buffer) => reader.push(chunk));
    });
    const port = await listen(tcp);
    const client = connect(`http://127.0.0.1:${port}`);
    client.on('error', () => undefined);
    afterTest(() => client.destroy());

    const sent: string[][] = [];
    const answers: IncomingHttpHeaders[] = [];
    for (let i = 0; i < 40; i++) {
      const headers: Record<string, string> = {
        ':method': i % 3 === 0 ? 'POST' : 'GET',
        ':path': `/svc/method/${i}?q=${'z'.repeat(i)}`,
        'user-agent': 'grpc-node-js/1.14.0',
        'content-type': 'application/grpc',
        'x-request-id': `req-${i}-${(i * 7919).toString(36)}`,
        'x-mixed': `Value With Spaces and UPPER ${i % 4}`,
      };
      if (i % 5 === 0) headers['x-binary-bin'] = Buffer.from([i, 255 - i, 0, 10]).toString('base64');
      if (i === 7) headers['x-long'] = 'L'.repeat(20000); // more than one frame: CONTINUATION
      if (i === 8) headers['x-many'] = Array.from({ length: 200 }, (_, k) => `item${k}`).join(',');
      const req = client.request(headers, { endStream: true });
      req.on('error', () => undefined);
      const answer = await new Promise<IncomingHttpHeaders>((resolve) => req.on('response', resolve));
      req.resume();
      answers.push(answer);
      sent.push([...Object.entries(headers).flat(), ':scheme', 'http', ':authority', `127.0.0.1:${port}`]);
    }
    expect(blocks.length).toBe(40);
    blocks.forEach((b, i) => expect(pairs(b.fields)).toEqual(pairs(sent[i]!)));
    // nghttp2 indexed fields: the same request again costs a fraction of its first block
    expect(decoder.entries().length).toBeGreaterThan(3);
    for (const i of [20, 30, 39]) {
      const plain = sent[i]!.reduce((n, s) => n + s.length, 0);
      expect(blocks[i]!.size).toBeLessThan(plain / 2);
    }
    answers.forEach((a, i) => {
      expect(a[':status']).toBe(200);
      expect(a['x-request']).toBe(String(i + 1));
      expect(a['x-long']).toBe('a'.repeat(i + 1));
    });
  });

  it('sends requests a node:http2 server reads exactly, and decodes its answers', async () => {
    const seen: Array<{ raw: string[]; sensitive: string[] }> = [];
    const server = createH2Server();
    server.on('session', (session) => afterTest(() => session.destroy()));
    server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, _flags: number, raw?: string[]) => {
      // node passes the fields as received, in order, as a fourth argument its types do not declare
      seen.push({
        raw: raw ?? [],
        sensitive: (headers as Record<symbol, string[] | undefined>)[sensitiveHeaders] ?? [],
      });
      stream.respond(
        {
          ':status': 201,
          'x-seen': String(seen.length),
          'set-cookie': `id=${'c'.repeat(seen.length)}; Path=/`,
          'content-type': 'text/plain',
        },
        { endStream: true },
      );
    });
    const port = await listen(server);

    const answers = new Map<number, string[]>();
    const settings: number[] = [];
    const decoder = new HpackDecoder();
    const socket = dial(port);
    const onHeaders = headerBlocks((streamId, block) => answers.set(streamId, decoder.decode(block)));
    const reader = new FrameReader((f) => {
      if (onHeaders(f)) return;
      if (f.type === FrameType.SETTINGS) {
        settings.push(f.flags);
        if (!(f.flags & Flag.ACK)) socket.write(settingsAckFrame());
      }
    });
    socket.on('data', (chunk: Buffer) => reader.push(chunk));
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(Buffer.concat([CLIENT_PREFACE, settingsFrame([[Setting.ENABLE_PUSH, 0]])]));

    const encoder = new HpackEncoder();
    const requests: string[][] = [];
    for (let i = 0; i < 30; i++) {
      const fields = [':method', 'GET', ':scheme', 'http', ':authority', `127.0.0.1:${port}`, ':path', `/items/${i}`];
      fields.push('accept', 'application/json', 'x-trace', `trace-${i % 4}`, 'x-secret', `s3cr3t-${i}`);
      if (i % 6 === 0) fields.push('authorization', 'Bearer abc.def.ghi');
      if (i === 10) encoder.setMaxTableSize(256); // a size update at the start of the next block
      if (i === 20) encoder.setMaxTableSize(0);
      if (i === 25) encoder.setMaxTableSize(4096);
      const block = encoder.encode(fields, [6]); // x-secret: never indexed
      // request 5 goes as HEADERS and CONTINUATIONs of at most 8 octets
      const frames = headersFrames(1 + 2 * i, block, true, i === 5 ? 8 : 16384);
      if (i === 5) expect(frames.length).toBe(block.length + 9 * Math.ceil(block.length / 8));
      if (i === 5) expect(block.length).toBeGreaterThan(24);
      socket.write(frames);
      requests.push(fields);
    }
    await until(() => answers.size === 30, 5000);

    expect(settings).toContain(Flag.ACK);
    expect(seen.length).toBe(30);
    seen.forEach((s, i) => {
      expect(s.raw).toEqual(requests[i]);
      expect(s.sensitive).toContain('x-secret');
      if (i % 6 === 0) expect(s.sensitive).toContain('authorization');
    });
    for (let i = 0; i < 30; i++) {
      const a = answers.get(1 + 2 * i)!;
      expect(a.slice(0, 2)).toEqual([':status', '201']);
      const fields = new Map<string, string>();
      for (let k = 0; k < a.length; k += 2) fields.set(a[k]!, a[k + 1]!);
      expect(fields.get('x-seen')).toBe(String(i + 1));
      expect(fields.get('set-cookie')).toBe(`id=${'c'.repeat(i + 1)}; Path=/`);
      expect(fields.get('content-type')).toBe('text/plain');
      expect(fields.get('date')).toMatch(/GMT$/);
    }
    expect(decoder.entries().length).toBeGreaterThan(0);
  });
});
