// Saved nat tables for the model's tests: proxy-init's golden restore payload (for Linkerd's proxy-init arguments) and a
// live `iptables-legacy-save` of a pod after proxy-init ran (header, counters, a filter table).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const LINKERD_ARGS_NAT = readFileSync(join(here, 'linkerd-args-nat.restore'), 'utf8');
export const LIVE_SAVE = readFileSync(join(here, 'live-nat.save'), 'utf8');
