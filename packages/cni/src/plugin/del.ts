// DEL: remove what ADD wrote, when the namespace still exists, from the record ADD kept (the pod may
// be gone from the API server by now). Idempotent and never failing: a DEL that fails would keep
// the runtime from tearing the sandbox down, and the namespace goes with the sandbox anyway.
import { existsSync } from 'node:fs';
import { parseRuleArgs, writeRules } from '@minimesh/proxy-init';
import type { PluginDeps } from './deps.js';
import { readRecord, removeRecord } from './sandbox-record.js';
import type { CniEnv, NetConf } from './spec.js';

export async function cmdDel(env: CniEnv, conf: NetConf, deps: PluginDeps): Promise<void> {
  const log = deps.logger.child({ containerId: env.containerId.slice(0, 12) });
  let record;
  try {
    record = await readRecord(conf.stateDir, env.containerId);
  } catch (err) {
    log.warn({ err }, `DEL: the record in ${conf.stateDir} cannot be read; nothing removed`);
    return;
  }
  if (!record) {
    log.debug('DEL: minimesh-cni wrote nothing for this sandbox');
    return;
  }
  const id = `pod ${record.namespace}/${record.name}`;
  if (env.netns && existsSync(env.netns)) {
    try {
      await writeRules({
        rules: parseRuleArgs(record.args),
        cleanup: true,
        runner: deps.runner(env.netns),
        logger: log,
        lookup: deps.lookup,
      });
      log.info(`DEL: ${id}: proxy-init's rules removed`);
    } catch (err) {
      log.warn({ err }, `DEL: ${id}: removing the rules failed (the namespace goes with the sandbox)`);
    }
  } else {
    log.info(`DEL: ${id}: the network namespace is gone already`);
  }
  await removeRecord(conf.stateDir, env.containerId).catch((err: unknown) =>
    log.warn({ err }, `DEL: ${id}: the record could not be removed`),
  );
}
