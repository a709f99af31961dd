import { describe, expect, it } from 'vitest';
import { CAP_NET_ADMIN, hasCapability } from './capabilities.js';

const status = (capEff: string) => `Name:\tnode\nCapInh:\t0000000000000000\nCapPrm:\t${capEff}\nCapEff:\t${capEff}\n`;

describe('hasCapability', () => {
  it.each([
    ['root', '000001ffffffffff', true],
    ['root without net_admin (bit 12)', '000001ffffffefff', false],
    ['only net_admin', '0000000000001000', true],
    ['nobody', '0000000000000000', false],
  ])('%s', (_who, capEff, want) => expect(hasCapability(CAP_NET_ADMIN, status(capEff))).toBe(want));
});
