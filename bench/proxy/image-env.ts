// The environment the proxy's image sets (the Dockerfile's ENV lines of its `proxy` stage), so that the
// bench runs the proxy as a pod runs it: what the image sets for the runtime (MALLOC_ARENA_MAX) is part
// of what is measured. Paths into the image (the addon) are the bench's own.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** NAME=value pairs of `ENV` instructions in the Dockerfile stage `stage` (`ENV A=1 B=2` form only). */
export function dockerfileStageEnv(dockerfile: string, stage: string): Record<string, string> {
  const body = dockerfile
    .replace(/^#.*$/gm, '')
    .split(/^(?=FROM )/m)
    .find((s) => new RegExp(`^FROM \\S+ AS ${stage}\\s*$`, 'm').test(s.split('\n')[0] ?? ''));
  if (body === undefined)
    throw new Error(`the Dockerfile has no stage "${stage}" (expected "FROM <base> AS ${stage}")`);
  const env: Record<string, string> = {};
  for (const line of body.split('\n'))
    if (line.startsWith('ENV ')) Object.assign(env, assignments(line.slice(4), `the Dockerfile's ${stage} stage`));
  return env;
}

/** "NAME=value NAME=value" (space-separated) as an environment; `what` names the source in the error. */
export function assignments(text: string, what: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const item of text.trim().split(/\s+/).filter(Boolean)) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new Error(`${what}: "${item}" is not NAME=value (expected e.g. "MALLOC_ARENA_MAX=2")`);
    env[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return env;
}

/** The proxy image's environment, less what names a path inside the image. */
export function proxyImageEnv(root: string): Record<string, string> {
  const env = dockerfileStageEnv(readFileSync(join(root, 'Dockerfile'), 'utf8'), 'proxy');
  for (const k of Object.keys(env)) if (env[k]!.startsWith('/app/')) delete env[k];
  return env;
}
