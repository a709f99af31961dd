// A pool of worker threads for the CPU-bound parts of Certify (--certify-workers): the CSR check and
// the signing run in ./signing-worker.ts, the main thread keeps the I/O (accepting connections, HTTP/2,
// the TokenReview, the answer). Each call goes to the worker with the fewest calls in flight (ties in
// turn). The issuer crosses to a worker once per issuer generation: a reloaded issuer (a new object
// from the issuer watcher) is a new generation, sent to each worker before the first call that signs
// with it. A worker that ends fails its calls in flight with MINIMESH_IDENTITY_WORKER_FAILED and is
// replaced; one that cannot even start (three times in a row) is not. close() ends every worker.
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { IdentityError } from '../errors.js';
import type { CertifyCrypto, CheckedCsr, SignedLeaf } from './certify-crypto.js';
import type { LeafIssuer, LeafOptions } from './leaf.js';
import {
  errorFromWire,
  fromWire,
  issuerPayload,
  SIGNING_WORKER_MARK,
  toWire,
  type FromWorker,
  type IssuerPayload,
  type ToWorker,
} from './signing-protocol.js';

/** Most worker threads --certify-workers accepts. */
export const MAX_CERTIFY_WORKERS = 16;
/** Most worker threads `--certify-workers auto` picks (each is a V8 heap of its own). */
export const MAX_AUTO_CERTIFY_WORKERS = 4;

/**
 * --certify-workers: a whole number from 0 (the CSR check and signing on the main thread) to
 * MAX_CERTIFY_WORKERS, or `auto`: one per core beyond the main thread's, at least 1, at most
 * MAX_AUTO_CERTIFY_WORKERS. Throws RangeError naming the value and what is expected.
 */
export function parseCertifyWorkers(value: string, cores: number = availableParallelism()): number {
  if (value.trim() === 'auto') return Math.min(MAX_AUTO_CERTIFY_WORKERS, Math.max(1, cores - 1));
  const n = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 0 || n > MAX_CERTIFY_WORKERS)
    throw new RangeError(
      `"${value}" is not valid: expected auto or a whole number from 0 (no worker threads) to ${MAX_CERTIFY_WORKERS}`,
    );
  return n;
}

export interface SigningPoolOptions {
  /** Worker threads, 1 to MAX_CERTIFY_WORKERS. */
  size: number;
  /** Told when a worker ends unexpectedly, with how many calls it failed and whether it is replaced. */
  onWorkerExit?: (info: { threadId: number; reason: string; failedCalls: number; replaced: boolean }) => void;
  /** Starts a worker thread (default `new Worker`); tests use it to get hold of a worker to end. */
  spawn?: (url: URL | string, options: WorkerOptions) => Worker;
}

export interface SigningPool extends CertifyCrypto {
  /** The worker threads' ids, in slot order (a replaced worker has a new one). */
  threadIds(): number[];
  /** Calls in flight over all workers. */
  readonly inFlight: number;
  /** Ends every worker; calls in flight and later calls fail. */
  close(): Promise<void>;
}

interface Pending {
  resolve: (reply: FromWorker) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  threadId: number;
  pending: Map<number, Pending>;
  /** The issuer generation last sent to this worker. */
  issuerGen: number;
  ready: boolean;
  /** Failures before 'ready' in a row, this slot's previous workers included. */
  startFailures: number;
  reason: string | undefined;
}

const MAX_START_FAILURES = 3;

function workerFailed(message: string): IdentityError {
  return new IdentityError('MINIMESH_IDENTITY_WORKER_FAILED', message);
}

/**
 * How to start ./signing-worker: its own file from dist/ or the bundle; from source (a .ts URL under
 * tsx or vitest) through a small bootstrap that registers tsx in the worker first.
 */
async function workerEntry(): Promise<{ entry: URL | string; eval: boolean }> {
  const { SIGNING_WORKER_URL } = await import('./signing-worker.js');
  if (!SIGNING_WORKER_URL.endsWith('.ts')) return { entry: new URL(SIGNING_WORKER_URL), eval: false };
  // require.resolve finds the CommonJS build of tsx's API (dist/esm/api/index.cjs); its ES build is beside it.
  const api = createRequire(import.meta.url)
    .resolve('tsx/esm/api')
    .replace(/\.cjs$/, '.mjs');
  const tsx = pathToFileURL(api).href;
  const code = `import(${JSON.stringify(tsx)}).then((t) => { t.register(); return import(${JSON.stringify(SIGNING_WORKER_URL)}); });`;
  return { entry: code, eval: true };
}

export async function createSigningPool(opts: SigningPoolOptions): Promise<SigningPool> {
  if (!Number.isInteger(opts.size) || opts.size < 1 || opts.size > MAX_CERTIFY_WORKERS)
    throw new RangeError(
      `signing pool size: ${opts.size} is not valid: expected a whole number from 1 to ${MAX_CERTIFY_WORKERS}`,
    );
  const { entry, eval: isEval } = await workerEntry();
  const spawn = opts.spawn ?? ((url, o) => new Worker(url, o));
  const slots: (Slot | undefined)[] = [];
  let closed = false;
  let nextId = 1;
  let turn = 0;
  // The issuer of each generation: a reloaded issuer is a new object, hence a new generation.
  const generations = new WeakMap<LeafIssuer, { gen: number; payload: IssuerPayload }>();
  let lastGen = 0;
  const started: Promise<void>[] = [];

  function start(index: number, startFailures: number): Slot {
    const worker = spawn(entry, { eval: isEval, workerData: { mark: SIGNING_WORKER_MARK } });
    const slot: Slot = {
      worker,
      threadId: worker.threadId,
      pending: new Map(),
      issuerGen: 0,
      ready: false,
      startFailures,
      reason: undefined,
    };
    slots[index] = slot;
    started[index] = new Promise<void>((resolve, reject) => {
      worker.on('message', (msg: FromWorker) => {
        if (msg.t === 'ready') {
          slot.ready = true;
          slot.startFailures = 0;
          resolve();
          return;
        }
        const p = slot.pending.get(msg.id);
        if (!p) return;
        slot.pending.delete(msg.id);
        if (msg.t === 'error') p.reject(errorFromWire(msg.error));
        else p.resolve(msg);
      });
      worker.on('error', (err) => {
        slot.reason ??= `${err.name}: ${err.message}`;
      });
      worker.on('exit', (code) => {
        const reason = slot.reason ?? (closed ? 'the signing pool was closed' : `exit code ${code}`);
        const err = workerFailed(
          closed
            ? 'the signing pool is closed'
            : `the certify worker thread ${slot.threadId} ended (${reason}) before it answered; it is replaced`,
        );
        const failed = slot.pending.size;
        for (const p of slot.pending.values()) p.reject(err);
        slot.pending.clear();
        reject(workerFailed(`the certify worker thread ${slot.threadId} could not start (${reason})`));
        if (slots[index] !== slot) return;
        slots[index] = undefined;
        if (closed) return;
        const failures = slot.ready ? 0 : slot.startFailures + 1;
        const replaced = failures < MAX_START_FAILURES;
        opts.onWorkerExit?.({ threadId: slot.threadId, reason, failedCalls: failed, replaced });
        if (replaced) start(index, failures);
      });
    });
    // A replacement's start-up failure is reported through its exit, not as an unhandled rejection.
    started[index].catch(() => undefined);
    return slot;
  }

  function pick(): Slot {
    let best: Slot | undefined;
    for (let k = 0; k < slots.length; k++) {
      const s = slots[(turn + k) % slots.length];
      if (s && (!best || s.pending.size < best.pending.size)) best = s;
    }
    turn = (turn + 1) % slots.length;
    if (!best)
      throw workerFailed(
        closed ? 'the signing pool is closed' : 'no certify worker thread is running (they failed to start)',
      );
    return best;
  }

  function call(build: (id: number, slot: Slot) => ToWorker): Promise<FromWorker> {
    return new Promise<FromWorker>((resolve, reject) => {
      if (closed) throw workerFailed('the signing pool is closed');
      const slot = pick();
      const id = nextId++;
      const msg = build(id, slot);
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage(msg);
    });
  }

  function generation(issuer: LeafIssuer): { gen: number; payload: IssuerPayload } {
    let g = generations.get(issuer);
    if (!g) {
      g = { gen: ++lastGen, payload: issuerPayload(issuer) };
      generations.set(issuer, g);
    }
    return g;
  }

  for (let i = 0; i < opts.size; i++) start(i, 0);
  try {
    await Promise.all(started);
  } catch (err) {
    closed = true;
    await Promise.all(slots.flatMap((s) => (s ? [s.worker.terminate()] : [])));
    throw err;
  }

  return {
    async checkCsr(der, identity): Promise<CheckedCsr> {
      const r = await call((id) => ({ t: 'csr', id, der: toWire(der), identity }));
      if (r.t !== 'csr') throw new Error(`signing worker: expected a csr reply, got ${r.t}`);
      return { publicKeyInfo: fromWire(r.publicKeyInfo), threadId: r.threadId };
    },
    async sign(o: LeafOptions): Promise<SignedLeaf> {
      const { gen, payload } = generation(o.issuer);
      const r = await call((id, slot) => {
        if (slot.issuerGen !== gen) {
          slot.worker.postMessage({ t: 'issuer', gen, issuer: payload } satisfies ToWorker);
          slot.issuerGen = gen;
        }
        return {
          t: 'sign',
          id,
          gen,
          identity: o.identity,
          publicKeyInfo: toWire(o.publicKeyInfo),
          lifetime: o.lifetime,
          clockSkew: o.clockSkew,
          now: (o.now ?? new Date()).getTime(),
          serial: o.serial ? toWire(o.serial) : undefined,
        };
      });
      if (r.t !== 'sign') throw new Error(`signing worker: expected a sign reply, got ${r.t}`);
      return {
        der: fromWire(r.der),
        notBefore: r.notBefore,
        notAfter: r.notAfter,
        serial: fromWire(r.serial),
        threadId: r.threadId,
      };
    },
    threadIds: () => slots.flatMap((s) => (s ? [s.threadId] : [])),
    get inFlight() {
      return slots.reduce((n, s) => n + (s?.pending.size ?? 0), 0);
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all(slots.flatMap((s) => (s ? [s.worker.terminate()] : [])));
    },
  };
}
