// ADD: read the pod, decide, write proxy-init's rules in its network namespace, remember what was
// written, and pass the previous plugin's result on unchanged.
import { existsSync } from 'node:fs';
import { writeRules } from '@minimesh/proxy-init';
import { CniError } from '../errors.js';
import type { PluginDeps } from './deps.js';
import { decideForPod } from './pod-decision.js';
import { writeRecord } from './sandbox-record.js';
import { addResult, podOf, type CniEnv, type NetConf } from './spec.js';

export async function cmdAdd(env: CniEnv, conf: NetConf, deps: PluginDeps): Promise<Record<string, unknown>> {
  const pod = podOf(env);
  const log = deps.logger.child({
    containerId: env.containerId.slice(0, 12),
    ...(pod ? { pod: `${pod.namespace}/${pod.name}` } : {}),
  });
  if (!pod) {
    log.info('ADD: not a Kubernetes pod (no K8S_POD_NAMESPACE/K8S_POD_NAME in CNI_ARGS); nothing to do');
    return addResult(conf);
  }
  const id = `pod ${pod.namespace}/${pod.name}`;
  const object = await deps.readPod(conf, pod.namespace, pod.name);
  const decision = decideForPod(object);
  if (decision.kind === 'skip') {
    log.info(`ADD: ${id}: no rules to write: ${decision.reason}`);
    return addResult(conf);
  }
  const netns = env.netns as string;
  if (!existsSync(netns)) throw new CniError('MINIMESH_CNI_BAD_ENV', `${id}: CNI_NETNS ${netns} does not exist`);
  let written;
  try {
    written = await writeRules({
      rules: decision.rules,
      runner: deps.runner(netns),
      logger: log,
      lookup: deps.lookup,
    });
  } catch (err) {
    throw new CniError(
      'MINIMESH_CNI_RULES',
      `${id}: writing proxy-init's rules in the pod's network namespace failed: ${(err as Error).message}`,
      { cause: err },
    );
  }
  try {
    await writeRecord(conf.stateDir, {
      containerId: env.containerId,
      namespace: pod.namespace,
      name: pod.name,
      uid: object.metadata?.uid ?? pod.uid,
      node: object.spec?.nodeName,
      netns,
      args: decision.args,
      mode: written.binaries.mode,
      appliedAt: deps.now().toISOString(),
      saved: Object.fromEntries(written.reports.map((r) => [String(r.family), r.saved])),
    });
  } catch (err) {
    // The rules are in place; only the record for explain and DEL is missing.
    log.warn({ err }, `ADD: ${id}: rules written, but the record in ${conf.stateDir} could not be written`);
  }
  log.info({ args: decision.args }, `ADD: ${id}: proxy-init's rules written (iptables mode ${written.binaries.mode})`);
  return addResult(conf);
}
