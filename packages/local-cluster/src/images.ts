// THE image table: which local program runs for which container image. Containers run as processes
// on this machine's filesystem (the repository), so an image is only a name for a program here.
// An image that is not in this table fails its pod with reason ErrImageNeverPull.
import { existsSync } from 'node:fs';
import { basename, isAbsolute, join } from 'node:path';
import { repoRoot } from './paths.js';

export interface ImageEntry {
  /** Image repository (without tag or digest); `*` at the end matches one path segment. */
  repository: string;
  /** What runs, before the container's args (the image's ENTRYPOINT). */
  entrypoint: (image: string) => string[];
  description: string;
}

const node = process.execPath;
const program = (pkg: string) => () => [node, join(repoRoot, 'packages', pkg, 'dist', 'main.js')];

/** minimesh programs by name, for images whose container `command` names one (one image, several entry points). */
export const PROGRAMS: Record<string, () => string[]> = {
  'proxy-init': program('proxy-init'),
  proxy: program('proxy'),
  destination: program('destination'),
  policy: program('policy'),
  identity: program('identity'),
  injector: program('injector'),
  cli: program('cli'),
  minimesh: program('cli'),
};

export const IMAGE_TABLE: ImageEntry[] = [
  {
    repository: 'ghcr.io/minimesh/proxy-init',
    entrypoint: program('proxy-init'),
    description: 'node packages/proxy-init/dist/main.js',
  },
  {
    repository: 'ghcr.io/minimesh/proxy',
    entrypoint: program('proxy'),
    description: 'node packages/proxy/dist/main.js',
  },
  {
    repository: 'ghcr.io/minimesh/destination',
    entrypoint: program('destination'),
    description: 'node packages/destination/dist/main.js',
  },
  {
    repository: 'ghcr.io/minimesh/policy',
    entrypoint: program('policy'),
    description: 'node packages/policy/dist/main.js',
  },
  {
    repository: 'ghcr.io/minimesh/identity',
    entrypoint: program('identity'),
    description: 'node packages/identity/dist/main.js',
  },
  {
    repository: 'ghcr.io/minimesh/injector',
    entrypoint: program('injector'),
    description: 'node packages/injector/dist/main.js',
  },
  {
    repository: 'ghcr.io/minimesh/controller',
    entrypoint: program('cli'),
    description: 'node packages/cli/dist/main.js (map by command: destination, identity, injector...)',
  },
  { repository: 'ghcr.io/minimesh/cli', entrypoint: program('cli'), description: 'node packages/cli/dist/main.js' },
  {
    repository: 'minimesh.test/*',
    entrypoint: (image) => [node, join(repoRoot, 'e2e', 'fixtures', `${imageRepository(image).split('/')[1]}.mjs`)],
    description: 'node e2e/fixtures/<fixture>.mjs',
  },
  // Plain shells for debugging pods (the command is run on the host filesystem).
  { repository: 'busybox', entrypoint: () => ['sh'], description: 'the host shell' },
];

export function imageRepository(image: string): string {
  const noDigest = image.split('@')[0] ?? image;
  const lastSlash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > lastSlash ? noDigest.slice(0, colon) : noDigest;
}

function matches(pattern: string, repo: string): boolean {
  if (pattern.endsWith('/*')) {
    const prefix = pattern.slice(0, -1);
    return repo.startsWith(prefix) && !repo.slice(prefix.length).includes('/') && repo.length > prefix.length;
  }
  return pattern === repo;
}

export type ResolvedImage = { ok: true; argv: string[] } | { ok: false; reason: 'ErrImageNeverPull'; message: string };

/** The argv to run for a container (image + command + args), or why it cannot run. */
export function resolveImage(image: string, command?: string[], args?: string[]): ResolvedImage {
  const repo = imageRepository(image);
  const entry = IMAGE_TABLE.find((e) => matches(e.repository, repo));
  if (!entry) {
    return {
      ok: false,
      reason: 'ErrImageNeverPull',
      message: `image ${image} is not in the local cluster's image table (packages/local-cluster/src/images.ts): known images are ${IMAGE_TABLE.map((e) => e.repository).join(', ')}`,
    };
  }
  const entrypoint = entry.entrypoint(image);
  if (repo.startsWith('minimesh.test/') && !existsSync(entrypoint[1] ?? '')) {
    return {
      ok: false,
      reason: 'ErrImageNeverPull',
      message: `image ${image}: fixture ${entrypoint[1]} does not exist`,
    };
  }
  let argv: string[];
  if (command && command.length > 0) {
    const first = command[0]!;
    const named = PROGRAMS[basename(first).replace(/^minimesh-/, '')];
    if (named) argv = [...named(), ...command.slice(1)];
    else if (first === 'node' && command[1] && !isAbsolute(command[1]) && !command[1].startsWith('-')) {
      argv = [node, join(repoRoot, command[1]), ...command.slice(2)];
    } else if (first === 'node') argv = [node, ...command.slice(1)];
    else argv = [...command];
  } else argv = entrypoint;
  return { ok: true, argv: [...argv, ...(args ?? [])] };
}
