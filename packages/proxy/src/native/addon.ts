// Loading the proxy's N-API addon (packages/proxy/native, built by `npm run setup`): the socket options Node
// does not offer (original-dst.ts) and the event loop's idle-time accounting (event-loop.ts).
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { AddonMissingError } from './errors.js';

export interface OriginalDst {
  address: string;
  port: number;
  family: 4 | 6;
}

export interface Addon {
  getOriginalDst(fd: number): OriginalDst;
  setTcpUserTimeout(fd: number, ms: number): void;
  getTcpUserTimeout(fd: number): number;
  /** Absent from an addon built before it existed (a checkout not set up again). */
  stopLoopIdleTime?(): boolean;
}

/** Environment variable that points at a prebuilt original_dst.node (e.g. inside an image). */
export const ADDON_PATH_ENV = 'MINIMESH_ORIGINAL_DST_ADDON';

// Same relative path from src/native/ (tsx, vitest) and dist/native/ (built).
const DEFAULT_ADDON_PATH = fileURLToPath(new URL('../../native/build/Release/original_dst.node', import.meta.url));

let addon: Addon | undefined;
/** Loading the addon failed once: the best-effort callers (tryAddon) stop trying. */
let addonMissing = false;

export function addonPath(): string {
  return process.env[ADDON_PATH_ENV] || DEFAULT_ADDON_PATH;
}

/** The addon, loaded once. Throws AddonMissingError naming its path. */
export function loadAddon(): Addon {
  if (addon) return addon;
  const path = addonPath();
  try {
    addon = createRequire(import.meta.url)(path) as Addon;
  } catch (err) {
    throw new AddonMissingError(
      `original destination: the SO_ORIGINAL_DST addon could not be loaded from ${path}; run \`npm run setup\` to build it`,
      { cause: err },
    );
  }
  return addon;
}

/** The addon, or undefined when it cannot be loaded (not looked for again after the first failure). */
export function tryAddon(): Addon | undefined {
  if (addonMissing) return undefined;
  try {
    return loadAddon();
  } catch {
    addonMissing = true;
    return undefined;
  }
}
