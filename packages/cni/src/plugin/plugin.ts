// One invocation of the plugin: environment and stdin in, the JSON answer and the exit code out.
// Every failure becomes a CNI error object on stdout (the runtime puts its msg in the pod's event).
import { MINIMESH_VERSION } from '@minimesh/config';
import { CniError } from '../errors.js';
import { cmdAdd } from './add.js';
import { cmdCheck } from './check.js';
import { cmdDel } from './del.js';
import type { PluginDeps } from './deps.js';
import { errorResult, parseCniEnv, parseNetConf, versionResult, type NetConf } from './spec.js';

export interface PluginOutcome {
  /** What to print on stdout ('' for none). */
  stdout: string;
  code: number;
}

const json = (o: unknown) => `${JSON.stringify(o)}\n`;

export async function runPlugin(
  processEnv: NodeJS.ProcessEnv,
  stdin: string,
  deps: (conf: NetConf | undefined) => PluginDeps,
): Promise<PluginOutcome> {
  let cniVersion = '1.0.0';
  let log: PluginDeps['logger'] | undefined;
  try {
    const env = parseCniEnv(processEnv);
    if (env.command === 'VERSION') return { stdout: json(versionResult()), code: 0 };
    const conf = parseNetConf(stdin);
    cniVersion = conf.cniVersion;
    const d = deps(conf);
    log = d.logger;
    log.debug({ command: env.command, version: MINIMESH_VERSION }, `${env.command} ${env.containerId}`);
    switch (env.command) {
      case 'ADD':
        return { stdout: json(await cmdAdd(env, conf, d)), code: 0 };
      case 'DEL':
        await cmdDel(env, conf, d);
        return { stdout: '', code: 0 };
      case 'CHECK':
        await cmdCheck(env, conf, d);
        return { stdout: '', code: 0 };
    }
  } catch (err) {
    const e =
      err instanceof CniError
        ? err
        : new CniError('MINIMESH_CNI_RULES', `minimesh-cni: unexpected error: ${(err as Error).message}`, {
            cause: err,
          });
    log?.error({ code: e.code, cniCode: e.cniCode }, e.message);
    const answer = new CniError(e.code, prefixed(e.message), e.details ? { details: e.details } : {});
    return { stdout: json(errorResult(answer, cniVersion)), code: 1 };
  }
}

/** "minimesh-cni: ..." once, so the kubelet's event names who refused the sandbox. */
function prefixed(message: string): string {
  return message.startsWith('minimesh-cni: ') ? message : `minimesh-cni: ${message}`;
}
