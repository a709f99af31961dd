import { describe, expect, it } from 'vitest';
import { resolveBinaries } from './binaries.js';

const have =
  (...names: string[]) =>
  (name: string) =>
    names.includes(name) ? `/sbin/${name}` : undefined;

describe('resolveBinaries', () => {
  it('uses the asked mode when its binaries are there, per family', () => {
    const r = resolveBinaries(
      'legacy',
      [4, 6],
      have('iptables-legacy-save', 'iptables-legacy-restore', 'ip6tables-legacy-save', 'ip6tables-legacy-restore'),
    );
    expect(r.mode).toBe('legacy');
    expect(r.fellBackFrom).toBeUndefined();
    expect(r.byFamily.get(6)).toEqual({
      mode: 'legacy',
      family: 6,
      save: '/sbin/ip6tables-legacy-save',
      restore: '/sbin/ip6tables-legacy-restore',
    });
  });
  it('falls back to nft, then plain, then legacy (Linkerd #587)', () => {
    expect(
      resolveBinaries(
        'legacy',
        [4],
        have('iptables-nft-save', 'iptables-nft-restore', 'iptables-save', 'iptables-restore'),
      ).mode,
    ).toBe('nft');
    const r = resolveBinaries('legacy', [4], have('iptables-save', 'iptables-restore'));
    expect(r.mode).toBe('plain');
    expect(r.fellBackFrom).toBe('legacy');
    expect(resolveBinaries('nft', [4], have('iptables-legacy-save', 'iptables-legacy-restore')).mode).toBe('legacy');
  });
  it('needs every family: a mode missing ip6tables is skipped', () => {
    expect(
      resolveBinaries(
        'legacy',
        [4, 6],
        have(
          'iptables-legacy-save',
          'iptables-legacy-restore',
          'iptables-save',
          'iptables-restore',
          'ip6tables-save',
          'ip6tables-restore',
        ),
      ).mode,
    ).toBe('plain');
  });
  it('names the mode and every binary looked for when none is installed (exit 2)', () => {
    let err: (Error & { exitCode?: number; code?: string }) | undefined;
    try {
      resolveBinaries('nft', [4], have());
    } catch (e) {
      err = e as Error;
    }
    expect(err?.code).toBe('MINIMESH_PROXY_INIT_MISSING_BINARY');
    expect(err?.exitCode).toBe(2);
    expect(err?.message).toBe(
      'iptables mode nft: its binaries are not installed and no fallback is: looked in PATH for nft (iptables-nft-save, iptables-nft-restore); then plain (iptables-save, iptables-restore); then legacy (iptables-legacy-save, iptables-legacy-restore)',
    );
  });
});
