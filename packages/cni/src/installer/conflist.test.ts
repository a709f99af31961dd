import { describe, expect, it } from 'vitest';
import { insertPlugin, isChained, pickConfFile, removePlugin, type PluginEntry } from './conflist.js';

const entry: PluginEntry = {
  type: 'minimesh-cni',
  log_level: 'info',
  state_dir: '/var/run/minimesh-cni',
  kubernetes: { kubeconfig: '/etc/cni/net.d/minimesh-cni-kubeconfig' },
};
const conf = {
  cniVersion: '1.0.0',
  name: 'k8s',
  plugins: [
    { type: 'bridge', bridge: 'cni0', ipam: { type: 'host-local', ranges: [[{ subnet: '10.1.0.0/16' }]] } },
    { type: 'portmap', capabilities: { portMappings: true } },
  ],
};

describe('the conflist the runtime reads', () => {
  it('is the first CNI file by name, as libcni picks it', () => {
    expect(pickConfFile(['99-z.conflist', '10-a.conflist', 'minimesh-cni-kubeconfig', '.10-a.conflist.tmp'])).toBe(
      '10-a.conflist',
    );
    expect(pickConfFile(['20-b.json', '30-c.conf'])).toBe('20-b.json');
    expect(pickConfFile(['minimesh-cni-kubeconfig'])).toBeUndefined();
  });

  it.each([
    ['two spaces and a newline (the local cluster, kubeadm guides)', `${JSON.stringify(conf, null, 2)}\n`],
    ['four spaces, no final newline', JSON.stringify(conf, null, 4)],
    ['tabs', `${JSON.stringify(conf, null, '\t')}\n`],
    ['one line', JSON.stringify(conf)],
  ])('inserting and removing our entry gives back the same bytes: %s', (_what, text) => {
    const added = insertPlugin('10-a.conflist', text, entry);
    expect(added.changed).toBe(true);
    expect((JSON.parse(added.text) as typeof conf).plugins.map((p) => p.type)).toEqual([
      'bridge',
      'portmap',
      'minimesh-cni',
    ]);
    expect(isChained('10-a.conflist', added.text, entry)).toBe(true);
    expect(insertPlugin('10-a.conflist', added.text, entry)).toEqual({ text: added.text, changed: false });
    expect(removePlugin('10-a.conflist', added.text)).toEqual({ text, changed: true });
    expect(removePlugin('10-a.conflist', text)).toEqual({ text, changed: false });
  });

  it('moves itself back to the end when another plugin was appended after it, and refreshes a changed entry', () => {
    const withOurs = JSON.parse(insertPlugin('f', JSON.stringify(conf), entry).text) as typeof conf;
    withOurs.plugins.push({ type: 'bandwidth' } as never);
    const moved = insertPlugin('f', JSON.stringify(withOurs), entry);
    expect((JSON.parse(moved.text) as typeof conf).plugins.map((p) => p.type)).toEqual([
      'bridge',
      'portmap',
      'bandwidth',
      'minimesh-cni',
    ]);
    const refreshed = insertPlugin('f', moved.text, { ...entry, log_level: 'debug' });
    expect(refreshed.changed).toBe(true);
    expect((JSON.parse(refreshed.text) as { plugins: { log_level?: string }[] }).plugins.at(-1)?.log_level).toBe(
      'debug',
    );
  });

  it('refuses a single-plugin .conf and text that is not JSON, saying so', () => {
    expect(() => insertPlugin('/etc/cni/net.d/10-x.conf', '{"cniVersion":"0.4.0","type":"bridge"}', entry)).toThrow(
      '/etc/cni/net.d/10-x.conf is a single-plugin configuration (no "plugins" list): minimesh-cni chains itself only into a conflist',
    );
    expect(() => insertPlugin('f.conflist', '{"plugins": [', entry)).toThrow(/^f\.conflist is not JSON/);
  });
});
