// CHECK: the pod's rules are still exactly what proxy-init's plan says (read-only).
import { verifyRules } from '@minimesh/proxy-init';
import { CniError } from '../errors.js';
import type { PluginDeps } from './deps.js';
import { decideForPod } from './pod-decision.js';
import { podOf, type CniEnv, type NetConf } from './spec.js';

export async function cmdCheck(env: CniEnv, conf: NetConf, deps: PluginDeps): Promise<void> {
  const pod = podOf(env);
  if (!pod) return;
  const id = `pod ${pod.namespace}/${pod.name}`;
  const decision = decideForPod(await deps.readPod(conf, pod.namespace, pod.name));
  if (decision.kind === 'skip') return;
  let problems: string[];
  try {
    ({ problems } = await verifyRules({
      rules: decision.rules,
      runner: deps.runner(env.netns as string),
      logger: deps.logger,
      lookup: deps.lookup,
    }));
  } catch (err) {
    throw new CniError('MINIMESH_CNI_RULES', `${id}: reading the nat table failed: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (problems.length > 0)
    throw new CniError(
      'MINIMESH_CNI_CHECK',
      `${id}: the nat rules are not the ones minimesh-cni wrote: ${problems.join('; ')}`,
    );
  deps.logger.debug(`CHECK: ${id}: rules in place`);
}
