// Failure accrual across a balanced set: endpoints whose breaker is open leave the pick, a set whose
// every endpoint is ejected answers ALL_EJECTED, a probe brings an endpoint back, a policy without
// accrual takes the breakers off, and outbound_http_balancer_endpoints counts ready and pending.
import type { CompiledFailureAccrual } from '@minimesh/policy/client';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { discovered } from '../../test/support/stages.js';
import type { Endpoint } from '../targets.js';
import { ALL_EJECTED, FailureAccrual, type BalancedSet } from './failure-accrual.js';
import { DEFAULT_PEAK_EWMA, PeakEwma } from './p2c-peak-ewma.js';

const AUTHORITY = 'web.shop.svc.cluster.local:80';
const CONFIG: CompiledFailureAccrual = { maxFailures: 3, minMs: 1000, maxMs: 8000, jitter: 0 };

function setup(config: CompiledFailureAccrual | undefined) {
  const clock = { now: 0 };
  const now = () => clock.now;
  // Every endpoint costs the same to P2C (its clock stands still), so the picks spread evenly and only
  // the breakers (on the test's clock) make a difference.
  const ep = (ip: string): Endpoint => ({
    ...discovered(ip, 8080, 'web.shop'),
    load: new PeakEwma({ ...DEFAULT_PEAK_EWMA, now: () => 0 }),
  });
  const set: BalancedSet = { authority: AUTHORITY, set: { list: [ep('10.0.0.1'), ep('10.0.0.2'), ep('10.0.0.3')] } };
  const state = { config };
  const registry = new Registry();
  const accrual = new FailureAccrual({
    lookup: (a) => (a === AUTHORITY ? state.config : undefined),
    healthy: (e) => e.load?.ready !== false,
    log: createLogger({ name: 'test', level: 'silent' }),
    registry,
    now,
  });
  /** Sends n requests; `bad` endpoints answer 500, the others 200. */
  const send = (n: number, bad: ReadonlySet<string>): Map<string, number> => {
    const counts = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const picked = accrual.pick(set);
      if (picked === undefined || picked === ALL_EJECTED) throw new Error(`no endpoint: ${String(picked)}`);
      counts.set(picked.ip, (counts.get(picked.ip) ?? 0) + 1);
      const load = picked.load!;
      load.end(load.start(), undefined);
      load.breaker?.record(bad.has(picked.ip), clock.now);
      clock.now += 1;
    }
    return counts;
  };
  return { clock, set, state, accrual, registry, send };
}

describe('FailureAccrual', () => {
  it('one endpoint answering 500: ejected after 3 failures, then it gets only its probes', () => {
    const { send } = setup(CONFIG);
    const counts = send(3000, new Set(['10.0.0.1']));
    // 3 failures, then a probe every penalty (1 s, 2 s, 4 s, 8 s, 8 s...) over 3 s of requests.
    expect(counts.get('10.0.0.1')).toBeLessThanOrEqual(3 + 3);
    expect((counts.get('10.0.0.2') ?? 0) + (counts.get('10.0.0.3') ?? 0)).toBeGreaterThan(2990);
  });

  it('every endpoint ejected: ALL_EJECTED, with the time to the next probe', () => {
    const { set, accrual, send } = setup(CONFIG);
    expect(() => send(100, new Set(['10.0.0.1', '10.0.0.2', '10.0.0.3']))).toThrow(/all endpoints ejected/);
    expect(accrual.pick(set)).toBe(ALL_EJECTED);
    expect(accrual.nextProbeInMs(set)).toBeGreaterThan(0);
    expect(accrual.nextProbeInMs(set)).toBeLessThanOrEqual(1000);
  });

  it('a recovered endpoint is probed after its penalty and gets its share back', () => {
    const { clock, send } = setup(CONFIG);
    send(50, new Set(['10.0.0.1']));
    clock.now += 8000; // past any penalty: the next pick of it is the probe, which succeeds
    const counts = send(3000, new Set());
    expect(counts.get('10.0.0.1')).toBeGreaterThan(700);
  });

  it('no accrual in the policy: every endpoint is picked, 500s or not; breakers come off when it goes', () => {
    const { set, state, send } = setup(undefined);
    expect(send(300, new Set(['10.0.0.1'])).get('10.0.0.1')).toBeGreaterThan(50);
    expect(set.set.list.every((e) => e.load?.breaker === undefined)).toBe(true);
    state.config = CONFIG;
    expect(send(300, new Set(['10.0.0.1'])).get('10.0.0.1')).toBeLessThan(10);
    expect(set.set.list[0]!.load!.breaker?.stateAt(0)).toBe('ejected');
    state.config = undefined;
    expect(send(300, new Set(['10.0.0.1'])).get('10.0.0.1')).toBeGreaterThan(50);
    expect(set.set.list.every((e) => e.load?.breaker === undefined)).toBe(true);
  });

  it('the same values in a new policy message keep the state; new values start it over', () => {
    const { set, state, send } = setup(CONFIG);
    send(100, new Set(['10.0.0.1']));
    const breaker = set.set.list[0]!.load!.breaker!;
    state.config = { ...CONFIG };
    send(1, new Set());
    expect(set.set.list[0]!.load!.breaker).toBe(breaker);
    state.config = { ...CONFIG, maxFailures: 5 };
    send(1, new Set());
    expect(set.set.list[0]!.load!.breaker).not.toBe(breaker);
  });

  it('outbound_http_balancer_endpoints: ready and pending, with the Service as parent and backend', async () => {
    const { registry, send } = setup(CONFIG);
    send(100, new Set(['10.0.0.1']));
    const text = await registry.metrics();
    const labels =
      'parent_group="core",parent_kind="Service",parent_namespace="shop",parent_name="web",parent_port="80",' +
      'backend_group="core",backend_kind="Service",backend_namespace="shop",backend_name="web",backend_port="80"';
    expect(text).toContain(`outbound_http_balancer_endpoints{endpoint_state="ready",${labels}} 2`);
    expect(text).toContain(`outbound_http_balancer_endpoints{endpoint_state="pending",${labels}} 1`);
  });
});
