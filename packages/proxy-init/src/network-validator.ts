#!/usr/bin/env node
// minimesh-network-validator: wiring only (see validator/program.ts).
import { validatorProgram } from './validator/program.js';

await validatorProgram().start();
