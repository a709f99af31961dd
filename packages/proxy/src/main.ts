#!/usr/bin/env node
// minimesh-proxy: wiring only. Environment → config → logger → proxy; SIGTERM drains.
import { ConfigError } from '@minimesh/config';
import { createLogger, runMain } from '@minimesh/runtime';
import { parseProxyConfig } from './config.js';
import { startProxy } from './proxy.js';
import { capYoungGeneration, limitHeapGrowth } from './memory/young-generation.js';

const HELP = `minimesh-proxy: the transparent sidecar (inbound 4143, outbound 4140, admin 4191).

Configured by environment (MINIMESH_PROXY_*; see packages/proxy/README.md), as the injector writes it.
Required: MINIMESH_PROXY_IDENTITY_LOCAL_NAME, MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS,
MINIMESH_PROXY_IDENTITY_TOKEN_FILE, MINIMESH_PROXY_IDENTITY_SVC_ADDR (+ _NAME unless loopback),
MINIMESH_PROXY_DESTINATION_SVC_ADDR (+ _NAME unless loopback).
`;

void runMain('minimesh-proxy', async (argv) => {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(HELP);
    return 0;
  }
  if (argv.length > 0)
    throw Object.assign(
      new Error(
        `unknown argument ${JSON.stringify(argv[0])}: expected no arguments (configuration is by environment; see --help)`,
      ),
      { exitCode: 2 },
    );
  let config;
  try {
    config = parseProxyConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) throw Object.assign(err, { exitCode: 2 });
    throw err;
  }
  capYoungGeneration();
  limitHeapGrowth();
  const logger = createLogger({ name: 'proxy', level: config.logLevel, format: config.logFormat });
  const proxy = await startProxy(config, logger, {
    env: process.env,
    onShutdownRequest: () => void stop('shutdown endpoint'),
  });
  let stopping = false;
  async function stop(why: string): Promise<void> {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'shutting down');
    await proxy.shutdown();
    process.exit(0);
  }
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  await new Promise<never>(() => undefined);
  return 0;
});
