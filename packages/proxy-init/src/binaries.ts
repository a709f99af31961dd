// Which iptables binaries to run: --iptables-mode legacy|nft|plain, or Linkerd's older
// --firewall-bin-path/--firewall-save-bin-path forms; with Linkerd's fallback (#587) when the chosen
// mode's binaries are not installed: nft, then plain, then legacy.
import { accessSync, constants } from 'node:fs';
import { basename, delimiter, join } from 'node:path';
import { ConfigError } from '@minimesh/config';
import { ProxyInitError } from './errors.js';
import type { Family } from './plan.js';

export const MODES = ['legacy', 'nft', 'plain'] as const;
export type IptablesMode = (typeof MODES)[number];

export interface ModeFlags {
  iptablesMode: string;
  firewallBinPath: string;
  firewallSavePath: string;
}

const BIN_TO_MODE: Record<string, IptablesMode> = {
  '': 'legacy',
  'iptables-legacy': 'legacy',
  'iptables-nft': 'nft',
  iptables: 'plain',
};

/** The mode the flags ask for. --iptables-mode wins; otherwise the firewall paths decide; default legacy. */
export function parseMode(flags: ModeFlags): IptablesMode {
  const mode = flags.iptablesMode.trim();
  if (mode !== '') {
    if ((MODES as readonly string[]).includes(mode)) return mode as IptablesMode;
    throw new ConfigError('--iptables-mode', mode, 'legacy, nft or plain');
  }
  const bin = basename(flags.firewallBinPath.trim());
  const fromBin = BIN_TO_MODE[bin];
  if (fromBin === undefined) {
    throw new ConfigError(
      '--firewall-bin-path',
      flags.firewallBinPath,
      'iptables-legacy, iptables-nft or iptables (or use --iptables-mode)',
    );
  }
  const save = basename(flags.firewallSavePath.trim());
  if (save !== '') {
    const fromSave = BIN_TO_MODE[save.replace(/-save$/, '')];
    if (!save.endsWith('-save') || fromSave === undefined || (bin !== '' && fromSave !== fromBin)) {
      const want =
        bin === ''
          ? 'iptables-legacy-save, iptables-nft-save or iptables-save'
          : `${bin}-save, to match --firewall-bin-path`;
      throw new ConfigError('--firewall-save-bin-path', flags.firewallSavePath, want);
    }
    if (bin === '') return fromSave;
  }
  return fromBin;
}

export interface Binaries {
  mode: IptablesMode;
  family: Family;
  save: string;
  restore: string;
}

export function binaryNames(mode: IptablesMode, family: Family): { save: string; restore: string } {
  const base = `${family === 4 ? 'iptables' : 'ip6tables'}${mode === 'plain' ? '' : `-${mode}`}`;
  return { save: `${base}-save`, restore: `${base}-restore` };
}

/** The full path of an executable found in PATH, or undefined. */
export function findInPath(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface ResolvedBinaries {
  mode: IptablesMode;
  /** Set when the asked-for mode was missing and another was used. */
  fellBackFrom?: IptablesMode;
  byFamily: Map<Family, Binaries>;
}

/**
 * Finds save/restore for every family in the asked mode, else in the fallbacks.
 * Throws MINIMESH_PROXY_INIT_MISSING_BINARY naming the mode and every binary looked for.
 */
export function resolveBinaries(
  mode: IptablesMode,
  families: Family[],
  lookup: (name: string) => string | undefined = (n) => findInPath(n),
): ResolvedBinaries {
  const order: IptablesMode[] = [mode, ...(['nft', 'plain', 'legacy'] as const).filter((m) => m !== mode)];
  const tried: string[] = [];
  for (const candidate of order) {
    const byFamily = new Map<Family, Binaries>();
    const names: string[] = [];
    for (const family of families) {
      const want = binaryNames(candidate, family);
      names.push(want.save, want.restore);
      const save = lookup(want.save);
      const restore = lookup(want.restore);
      if (save && restore) byFamily.set(family, { mode: candidate, family, save, restore });
    }
    tried.push(`${candidate} (${names.join(', ')})`);
    if (byFamily.size === families.length)
      return { mode: candidate, ...(candidate !== mode ? { fellBackFrom: mode } : {}), byFamily };
  }
  throw new ProxyInitError(
    'MINIMESH_PROXY_INIT_MISSING_BINARY',
    `iptables mode ${mode}: its binaries are not installed and no fallback is: looked in PATH for ${tried.join('; then ')}`,
  );
}

/** Names for --simulate on a machine without iptables: the asked mode, unresolved. */
export function nominalBinaries(mode: IptablesMode, families: Family[]): ResolvedBinaries {
  return {
    mode,
    byFamily: new Map(families.map((family) => [family, { mode, family, ...binaryNames(mode, family) }])),
  };
}
