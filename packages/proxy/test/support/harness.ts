// Builds in-process proxies on loopback for tests and benchmarks: config from a few fields, the
// original destination supplied by a function (no iptables on loopback).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { createLogger } from '@minimesh/runtime';
import { parseProxyConfig, startProxy, type RunningProxy } from '../../src/index.js';

export interface HarnessProxyOptions {
  identity: string;
  anchorPem: string;
  controlAddr: string;
  env?: Record<string, string>;
  inbound?: (s: Socket) => { ip: string; port: number } | undefined;
  outbound?: (s: Socket) => { ip: string; port: number } | undefined;
  inboundHost?: string;
}

/** Temporary directories made here; test files call removeTempDirs() in afterAll. */
const made: string[] = [];
export function removeTempDirs(): void {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** A temporary directory (mm-px-*), removed by removeTempDirs(). */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mm-px-'));
  made.push(dir);
  return dir;
}

export function proxyEnv(o: HarnessProxyOptions): Record<string, string> {
  const dir = tempDir();
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, `token-for-${o.identity}`);
  return {
    MINIMESH_PROXY_IDENTITY_LOCAL_NAME: o.identity,
    MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS: o.anchorPem,
    MINIMESH_PROXY_IDENTITY_TOKEN_FILE: tokenFile,
    MINIMESH_PROXY_IDENTITY_SVC_ADDR: o.controlAddr,
    MINIMESH_PROXY_DESTINATION_SVC_ADDR: o.controlAddr,
    MINIMESH_PROXY_INBOUND_LISTEN_ADDR: `${o.inboundHost ?? '127.0.0.1'}:0`,
    MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR: '127.0.0.1:0',
    MINIMESH_PROXY_ADMIN_LISTEN_ADDR: '127.0.0.1:0',
    MINIMESH_PROXY_CONTROL_LISTEN_ADDR: '127.0.0.1:0',
    MINIMESH_PROXY_LOG: process.env.MM_PX_LOG ?? 'silent',
    // The suites run on the proxy's own HTTP/2 engine; MINIMESH_PROXY_HTTP2_ENGINE=node runs them on node:http2.
    ...(process.env.MINIMESH_PROXY_HTTP2_ENGINE
      ? { MINIMESH_PROXY_HTTP2_ENGINE: process.env.MINIMESH_PROXY_HTTP2_ENGINE }
      : {}),
    ...o.env,
  };
}

export async function startHarnessProxy(o: HarnessProxyOptions): Promise<RunningProxy> {
  const config = parseProxyConfig(proxyEnv(o));
  const logger = createLogger({ name: 'proxy', level: config.logLevel, format: 'json', destination: process.stderr });
  return startProxy(config, logger, { originalDst: { inbound: o.inbound, outbound: o.outbound } });
}
