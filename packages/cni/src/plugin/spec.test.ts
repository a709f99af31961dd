import { describe, expect, it } from 'vitest';
import { CniError } from '../errors.js';
import { addResult, errorResult, parseCniEnv, parseNetConf, podOf, versionResult } from './spec.js';

const ENV = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'abc123',
  CNI_NETNS: '/var/run/netns/cni-1',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
  CNI_ARGS:
    'IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1;K8S_POD_INFRA_CONTAINER_ID=abc123;K8S_POD_UID=u-1',
};
const CONF = {
  cniVersion: '1.0.0',
  name: 'k8s',
  type: 'minimesh-cni',
  kubernetes: { kubeconfig: '/etc/cni/net.d/minimesh-cni-kubeconfig' },
  prevResult: { cniVersion: '1.0.0', interfaces: [{ name: 'eth0' }], ips: [{ address: '10.1.0.5/16' }] },
};

describe('the CNI environment', () => {
  it('reads the pod from CNI_ARGS as Kubernetes runtimes set it', () => {
    const env = parseCniEnv(ENV);
    expect(env).toMatchObject({ command: 'ADD', containerId: 'abc123', netns: '/var/run/netns/cni-1' });
    expect(podOf(env)).toEqual({ namespace: 'shop', name: 'web-1', uid: 'u-1' });
    expect(podOf(parseCniEnv({ ...ENV, CNI_ARGS: '' }))).toBeUndefined();
  });

  it('lets DEL come without a network namespace, but not ADD or CHECK', () => {
    expect(parseCniEnv({ ...ENV, CNI_COMMAND: 'DEL', CNI_NETNS: '' }).netns).toBeUndefined();
    for (const command of ['ADD', 'CHECK'])
      expect(() => parseCniEnv({ ...ENV, CNI_COMMAND: command, CNI_NETNS: '' })).toThrow(
        `${command}: CNI_NETNS is not set: the runtime must set it`,
      );
  });

  it('refuses an unknown command with code 4', () => {
    try {
      parseCniEnv({ ...ENV, CNI_COMMAND: 'GC' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(CniError);
      expect((err as CniError).cniCode).toBe(4);
      expect((err as Error).message).toMatch(
        /^CNI_COMMAND "GC" is not valid: expected one of ADD, DEL, CHECK, VERSION/,
      );
    }
  });
});

describe('the network configuration', () => {
  it('passes the previous result on as ADD’s own', () => {
    const conf = parseNetConf(JSON.stringify(CONF));
    expect(conf).toMatchObject({ logLevel: 'info', stateDir: '/var/run/minimesh-cni' });
    expect(addResult(conf)).toEqual(CONF.prevResult);
    expect(addResult(parseNetConf(JSON.stringify({ ...CONF, prevResult: undefined })))).toEqual({
      cniVersion: '1.0.0',
    });
  });

  it.each([
    ['not json', 6, /^the network configuration on stdin is not JSON/],
    [
      JSON.stringify({ ...CONF, cniVersion: '0.2.0' }),
      1,
      /cniVersion 0\.2\.0 is not supported: minimesh-cni speaks 0\.3\.0, 0\.3\.1, 0\.4\.0, 1\.0\.0/,
    ],
    [JSON.stringify({ ...CONF, kubernetes: {} }), 7, /"kubernetes\.kubeconfig" must name the kubeconfig/],
    [JSON.stringify({ ...CONF, prevResult: [] }), 7, /"prevResult" must be an object/],
  ])('refuses %s with CNI code %d', (text, code, message) => {
    try {
      parseNetConf(text);
      expect.unreachable();
    } catch (err) {
      expect((err as CniError).cniCode).toBe(code);
      expect((err as Error).message).toMatch(message);
    }
  });

  it('answers VERSION and errors in the spec’s shapes', () => {
    expect(versionResult()).toEqual({ cniVersion: '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] });
    expect(errorResult(new CniError('MINIMESH_CNI_API', 'no API', { details: 'x' }), '0.4.0')).toEqual({
      cniVersion: '0.4.0',
      code: 11,
      msg: 'no API',
      details: 'x',
    });
  });
});
