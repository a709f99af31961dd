import { describe, expect, it } from 'vitest';
import { planFirewall } from './plan.js';
import { renderApplyPayload } from './restore-payload.js';
import { parseNatSave } from './nat-state.js';
import { diffNatRules } from './verify.js';
import { LINKERD_PROXY_INIT_ARGS } from '@minimesh/test-support/linkerd';
import { parseRuleArgs } from './options.js';

const plan = planFirewall(parseRuleArgs([...LINKERD_PROXY_INIT_ARGS]).options).families[0]!;
const applied = renderApplyPayload(plan, parseNatSave(''));

describe('diffNatRules', () => {
  it('finds nothing to say about exactly the planned rules', () => {
    expect(diffNatRules(plan, applied)).toEqual([]);
  });

  it('names a missing chain and the missing jumps', () => {
    expect(diffNatRules(plan, '*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n')).toEqual([
      'IPv4: chain PROXY_INIT_REDIRECT is missing',
      'IPv4: PREROUTING has 0 jumps to PROXY_INIT_REDIRECT, expected exactly one',
      'IPv4: chain PROXY_INIT_OUTPUT is missing',
      'IPv4: OUTPUT has 0 jumps to PROXY_INIT_OUTPUT, expected exactly one',
    ]);
  });

  it('names a rule that is missing and one that should not be there', () => {
    const tampered = applied
      .replace(/^-A PROXY_INIT_OUTPUT -m owner .*$/m, '')
      .replace('COMMIT', '-A PROXY_INIT_OUTPUT -p udp -j RETURN\nCOMMIT');
    const problems = diffNatRules(plan, tampered);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^IPv4: chain PROXY_INIT_OUTPUT: missing `-A PROXY_INIT_OUTPUT -m owner --uid-owner 2102/,
    );
    expect(problems[0]).toContain('unexpected `-A PROXY_INIT_OUTPUT -p udp -j RETURN`');
  });

  it('notices a second jump into a chain', () => {
    const doubled = applied.replace('COMMIT', '-A OUTPUT -j PROXY_INIT_OUTPUT\nCOMMIT');
    expect(diffNatRules(plan, doubled)).toEqual([
      'IPv4: OUTPUT has 2 jumps to PROXY_INIT_OUTPUT, expected exactly one',
    ]);
  });
});
