// Imported first by main.ts, before the rest of the module graph is evaluated: V8's young generation may
// not grow while the proxy's modules load. The program skeleton's heap tuning (@minimesh/runtime
// tuneHeap, main.ts's `heap`) is installed only once they have, and caps growth from then on; without
// this, the start-up alone grew the young generation to 2 × 8 MiB (measured 2026-11-28: 16 MiB of new
// space at /ready against 8 MiB before the proxy's stages were split into their own modules, half the
// scavenges under load and +8 MB of anonymous memory). An explicit flag in execArgv or NODE_OPTIONS wins.
import { setFlagsFromString } from 'node:v8';

const explicit = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some(
  (s) => s.includes('--semi-space-growth-factor') || s.includes('--max-semi-space-size'),
);
if (!explicit) setFlagsFromString('--semi-space-growth-factor=1');
