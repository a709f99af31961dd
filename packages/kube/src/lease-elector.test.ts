// LeaseElector against an in-memory Lease API with optimistic concurrency (resourceVersion, 409).
import { createLogger } from '@minimesh/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { createFakeKubeClient } from './testing.js';
import type { KubeClient } from './client.js';
import { LeaseElector, toMicroTime } from './lease-elector.js';

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/minimesh/leases';

function fakeLeaseApi() {
  const api = createFakeKubeClient();
  return {
    api,
    /** Lease writes (create and update) so far. */
    get writes() {
      return api.calls.filter((c) => c.startsWith('POST') || c.startsWith('PUT'));
    },
    get lease() {
      return api.object(LEASES, 'minimesh', 'lease');
    },
  };
}

const logger = createLogger({ name: 'test', level: (process.env.LL as 'silent') ?? 'silent', format: 'json' });
const electors: LeaseElector[] = [];
afterEach(async () => {
  for (const e of electors.splice(0)) await e.stop({ release: false });
});

function elector(
  api: KubeClient,
  identity: string,
  events: string[],
  timings = { leaseDurationMs: 1000, renewDeadlineMs: 400, retryPeriodMs: 50 }, // leases count whole seconds
) {
  const e = new LeaseElector({
    api,
    namespace: 'minimesh',
    name: 'lease',
    identity,
    ...timings,
    logger,
    onStartedLeading: () => events.push(`${identity} leads`),
    onStoppedLeading: () => events.push(`${identity} stops`),
  });
  electors.push(e);
  return e;
}

/** A fresh fake API with candidate 'a' leading on it. */
async function leading(events: string[] = []) {
  const fake = fakeLeaseApi();
  const a = elector(fake.api, 'a', events);
  a.start();
  await until(() => a.isLeader);
  return { fake, a };
}

const until = async (cond: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('LeaseElector', () => {
  it('MicroTime has six fractional digits', () => {
    expect(toMicroTime(new Date('2026-11-22T00:00:01.234Z'))).toBe('2026-11-22T00:00:01.234000Z');
  });

  it('one of two candidates leads and renews; the other takes over only after the lease went unrenewed for its duration', async () => {
    const fake = fakeLeaseApi();
    const events: string[] = [];
    const a = elector(fake.api, 'a', events);
    a.start();
    await until(() => a.isLeader);
    const b = elector(fake.api, 'b', events);
    b.start();
    await new Promise((r) => setTimeout(r, 300));
    expect(b.isLeader).toBe(false);
    expect(fake.lease?.spec.holderIdentity).toBe('a');
    expect(fake.writes.length).toBeGreaterThan(3); // renewals every retry period (b never wrote: a held it)
    await a.stop({ release: false });
    // Measured from a's last renewal (the renewTime it wrote), not from when the test stopped it: a
    // loaded machine delays a's timers, so its last renewal may lie a few retry periods back.
    expect(fake.lease?.spec.holderIdentity).toBe('a');
    const lastRenewal = Date.parse(fake.lease?.spec.renewTime);
    await until(() => b.isLeader);
    const took = Date.now() - lastRenewal;
    // b dates that renewal to its read before it (at most a retry period, 50 ms, back) and counts the
    // lease duration (1 s) from there ...
    expect(took).toBeGreaterThanOrEqual(1000 - 50);
    expect(took).toBeLessThan(1000 + 800); // ... and acts when it runs out (slack for a loaded machine)
    expect(fake.lease?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1, leaseDurationSeconds: 1 });
    expect(events).toEqual(['a leads', 'a stops', 'b leads']);
  });

  it('an unreleased lease changes hands within its duration of the last renewal, not a retry period or two later', async () => {
    // Long retry periods make the difference visible: counted from when b first saw the renewal and
    // looked at again only every retry period (client-go's way), the takeover lands 2.0-3.0 s after
    // the last renewal; dated to b's read before it and looked at when it runs out, 1.5-2.0 s.
    const timings = { leaseDurationMs: 2000, renewDeadlineMs: 1000, retryPeriodMs: 500 };
    const fake = fakeLeaseApi();
    const events: string[] = [];
    const a = elector(fake.api, 'a', events, timings);
    a.start();
    await until(() => a.isLeader);
    // b reads half a retry period after each of a's renewals: the phase at which seeing a renewal late
    // and looking again only every retry period costs the most (2.25 s against 1.75 s).
    const renewed = fake.lease?.spec.renewTime;
    await until(() => fake.lease?.spec.renewTime !== renewed);
    await new Promise((r) => setTimeout(r, 250));
    const b = elector(fake.api, 'b', events, timings);
    b.start();
    await new Promise((r) => setTimeout(r, 1200)); // b has read a few of a's renewals
    await a.stop({ release: false });
    const lastRenewal = Date.parse(fake.lease?.spec.renewTime);
    await until(() => b.isLeader, 5000);
    const took = Date.now() - lastRenewal;
    expect(took).toBeGreaterThanOrEqual(2000 - 500); // never sooner than a retry period before the duration
    expect(took).toBeLessThan(2000 + 150); // within the duration, plus a request and a timer's slack
    expect(fake.lease?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  it('release on stop hands over at once', async () => {
    const fake = fakeLeaseApi();
    const events: string[] = [];
    const a = elector(fake.api, 'a', events);
    a.start();
    await until(() => a.isLeader);
    const b = elector(fake.api, 'b', events);
    b.start();
    await new Promise((r) => setTimeout(r, 100));
    const releasedAt = Date.now();
    await a.stop({ release: true });
    expect(fake.lease?.spec.holderIdentity).toBe('');
    await until(() => b.isLeader);
    expect(Date.now() - releasedAt).toBeLessThan(800); // a retry period or two, far below the lease duration
  });

  it('a leader that cannot renew steps down after the renew deadline', async () => {
    const events: string[] = [];
    const { fake, a } = await leading(events);
    // the API starts failing every request
    fake.api.failNext('*', LEASES, 503, 1000);
    // The deadline runs from the last successful renewal (its renewTime), which may lie more than a
    // retry period before this point when the machine is loaded and a's timers run late.
    const lastRenewal = Date.parse(fake.lease?.spec.renewTime);
    await until(() => !a.isLeader);
    expect(Date.now() - lastRenewal).toBeGreaterThanOrEqual(400);
    expect(fake.lease?.spec.holderIdentity).toBe('a'); // nobody wrote meanwhile: the deadline ran from that renewal
    expect(events).toEqual(['a leads', 'a stops']);
  });

  it('release survives a failed request: the shutdown retries it', async () => {
    const { fake, a } = await leading();
    fake.api.failNext('PUT', LEASES, 503, 1); // the release's first update fails
    await a.stop({ release: true });
    expect(fake.lease?.spec.holderIdentity).toBe('');
  });

  it('a leader that stepped down but is still named in the lease releases it on stop', async () => {
    const { fake, a } = await leading();
    fake.api.failNext('*', LEASES, 503, 1000);
    await until(() => !a.isLeader);
    expect(fake.lease?.spec.holderIdentity).toBe('a');
    fake.api.clearFailures();
    await a.stop({ release: true });
    expect(fake.lease?.spec.holderIdentity).toBe('');
  });
});
