#!/usr/bin/env node
// minimesh-proxy-init: wiring only (see program.ts).
import { runMain } from '@minimesh/runtime';
import { proxyInitMain } from './program.js';

await runMain('minimesh-proxy-init', (argv) => proxyInitMain(argv));
