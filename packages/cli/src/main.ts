#!/usr/bin/env node
// minimesh: the user's front door. One file per command under commands/; the skeleton
// (@minimesh/runtime defineCommandLine) dispatches and turns errors into one line and an exit code.
import { MINIMESH_VERSION } from '@minimesh/config';
import { defineCommandLine } from '@minimesh/runtime';
import { authzCommand } from './commands/authz.js';
import { certsCommand } from './commands/certs.js';
import { checkCommand } from './commands/check.js';
import { explainCommand } from './commands/explain.js';
import { injectCommand } from './commands/inject.js';
import { uninjectCommand } from './commands/uninject.js';
import { versionCommand } from './commands/version.js';
import { diagnosticsCommand, vizCommand } from './commands/viz.js';

await defineCommandLine({
  name: 'minimesh',
  summary: 'the minimesh command line',
  version: MINIMESH_VERSION,
  commands: {
    inject: { run: injectCommand, summary: 'add the proxy to the workloads of a YAML manifest' },
    uninject: { run: uninjectCommand, summary: 'remove what inject added' },
    explain: {
      run: explainCommand,
      summary:
        "say which nat rule a pod's connection meets and where its bytes go (explain ns/pod --port P | --to HOST:PORT)",
    },
    check: {
      run: checkCommand,
      summary: 'check the control plane, webhook, certificates (expiry, chain) and readiness',
    },
    authz: {
      run: authzCommand,
      summary: "list which Servers and policies admit whom on a workload's ports (authz ns/workload)",
    },
    certs: {
      run: certsCommand,
      summary: 'create the trust anchor and issuer, or a new issuer from an existing trust anchor (certs create)',
    },
    version: { run: versionCommand, summary: "print the client's version and the control plane's" },
    viz: {
      run: vizCommand,
      summary: 'golden metrics, edges, live requests and the dashboard (viz stat|edges|top|tap|dashboard)',
    },
    diagnostics: { run: diagnosticsCommand, summary: "a proxy's raw metrics through the API server (proxy-metrics)" },
  },
}).start();
