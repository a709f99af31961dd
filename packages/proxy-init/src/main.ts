#!/usr/bin/env node
// minimesh-proxy-init: wiring only (see program.ts).
import { proxyInitProgram } from './program.js';

await proxyInitProgram().start();
