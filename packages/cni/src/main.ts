#!/usr/bin/env node
// minimesh-cni-installer: wiring only (see installer/program.ts).
import { installerProgram } from './installer/program.js';

await installerProgram().start();
