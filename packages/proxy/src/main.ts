#!/usr/bin/env node
// minimesh-proxy: wiring only. Environment → config → logger → proxy; the skeleton (@minimesh/runtime
// defineProgram) maps bad settings to one line and exit 2, and SIGTERM to the graceful drain.
// First: no young-generation growth while the modules below load (see heap-start.ts).
import './heap-start.js';
import { MINIMESH_VERSION, PROXY_ENV } from '@minimesh/config';
import { defineProgram } from '@minimesh/runtime';
import { parseProxyConfig } from './config/proxy.js';
import { stopLoopIdleTime } from './native/index.js';
import { startProxy } from './proxy.js';

const USAGE = `minimesh-proxy   (configured by environment, MINIMESH_PROXY_*, as the injector writes it;
see packages/proxy/README.md)

Required: MINIMESH_PROXY_IDENTITY_LOCAL_NAME, MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS,
MINIMESH_PROXY_IDENTITY_TOKEN_FILE, MINIMESH_PROXY_IDENTITY_SVC_ADDR (+ _NAME unless loopback),
MINIMESH_PROXY_DESTINATION_SVC_ADDR (+ _NAME unless loopback).
--log-level / --log-format apply when MINIMESH_PROXY_LOG / MINIMESH_PROXY_LOG_FORMAT are not set.`;

await defineProgram({
  name: 'minimesh-proxy',
  summary: 'the transparent sidecar (inbound 4143, outbound 4140, admin 4191)',
  usage: USAGE,
  version: MINIMESH_VERSION,
  // Young generation at most 2 × 4 MiB, old generation 30 % over live: a busy proxy otherwise grows to
  // 2 × 16 MiB semi-spaces and keeps promoted request garbage (loaded RSS 102 / 85 MB against 75 / 75 MB).
  // 4 MiB, not 2: at 2, request garbage still alive two scavenges later was promoted and the old space
  // filled with it; 4 halved the GCs and cut GC time 3x at the same USS (docs/proxy.md, 2026-11-29).
  heap: { maxSemiSpaceMb: 4, heapGrowingPercent: 30 },
  flags: {},
  // The environment is the injector's contract; --log-level / --log-format apply where it says nothing.
  configure: ({ env, flags }) =>
    parseProxyConfig({
      [PROXY_ENV.logLevel]: flags['log-level'],
      [PROXY_ENV.logFormat]: flags['log-format'],
      ...env,
    }),
  logging: (config) => ({ level: config.logLevel, format: config.logFormat }),
  // The drain is bounded by MINIMESH_PROXY_SHUTDOWN_GRACE_PERIOD itself; the skeleton must not cut it.
  shutdownTimeoutMs: 2 ** 31 - 1,
  async run({ config, logger, env, shutdown }) {
    // One poll per wake-up instead of two (src/native/event-loop.ts): nothing here reads the loop's utilization.
    if (stopLoopIdleTime()) logger.debug('event loop: idle-time accounting off, one poll per wake-up');
    const proxy = await startProxy(config, logger, {
      env,
      onShutdownRequest: () => shutdown('shutdown endpoint'),
    });
    return { close: () => proxy.shutdown() };
  },
}).start();
