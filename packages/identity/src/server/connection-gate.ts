// Between accept and HTTP/2: in a restart storm identity accepts thousands of connections at once
// (libuv accepts everything pending in one go), and handing each straight to HTTP/2 set up every
// session in one synchronous run, so no connection's SETTINGS (the server preface) went out before
// the last session was made; past ~1 s of that, every client had given up (its connect timeout),
// reconnected, and identity set up sessions for connections already gone (docs/identity.md,
// "Admission control"). The gate instead:
// - waits for a connection's first bytes (an HTTP/2 client sends its preface right after connecting);
//   a connection whose client has closed it by its turn (it gave up while it waited) is destroyed with
//   no HTTP/2 work at all. A read that returns a client's bytes does not see the FIN behind them (libuv
//   reads again only on the next poll), so a connection's turn comes at the earliest one event-loop
//   iteration after its bytes, when its end, if any, has been read;
// - hands connections to HTTP/2 at most `batch` per event-loop turn, so that each batch's SETTINGS are
//   written before the next batch is set up, and reads and answers happen in between;
// - holds at most `maxWaiting` connections with their first bytes; past that the oldest is closed
//   before any HTTP/2 work (it is the nearest to its client's timeout).
import type { Socket } from 'node:net';

export type GateOrder = 'fifo' | 'lifo' | 'adaptive';

export interface ConnectionGateOptions {
  /** Hands a live connection, its first bytes put back, to HTTP/2. */
  handOver: (socket: Socket) => void;
  /** Connections handed over per event-loop turn (>= 1). */
  batch: number;
  /** Connections waiting for their turn, at most (>= 1); past it the oldest is closed. */
  maxWaiting: number;
  /**
   * Which waiting connection goes first: the oldest (fifo), the newest (lifo), or the oldest until the
   * oldest has waited `congestedMs`, then the newest (adaptive: under overload the oldest would get their
   * SETTINGS after their client gave up; left waiting, they end and go without HTTP/2 work).
   */
  order: GateOrder;
  /** For `adaptive` (default 200 ms). */
  congestedMs?: number;
  /** The clock, ms (tests). */
  now?: () => number;
}

export interface ConnectionGateStats {
  /** Handed to HTTP/2. */
  handedOver: number;
  /** Closed by their client before their turn: no HTTP/2 work was done for them. */
  gone: number;
  /** Closed by the gate because more than maxWaiting were waiting. */
  shed: number;
}

export interface ConnectionGate {
  /** Takes a just-accepted connection. */
  admit(socket: Socket): void;
  /** Connections with their first bytes, waiting for their turn. */
  readonly waiting: number;
  readonly stats: Readonly<ConnectionGateStats>;
  /** Destroys every connection not yet handed over. */
  close(): void;
}

interface Pending {
  socket: Socket;
  chunks: Buffer[];
  gone: boolean;
  /** `iteration` when its first bytes came. */
  seenAt: number;
  /** now() when its first bytes came. */
  since: number;
  /** In `ready` and not gone: counted in `live`. */
  inReady: boolean;
  detach: () => void;
}

export function createConnectionGate(opts: ConnectionGateOptions): ConnectionGate {
  for (const [name, v] of [
    ['batch', opts.batch],
    ['maxWaiting', opts.maxWaiting],
  ] as const)
    if (!Number.isInteger(v) || v < 1)
      throw new RangeError(`connection gate ${name}: ${v} is not valid: expected a whole number >= 1`);
  const now = opts.now ?? (() => performance.now());
  const congestedMs = opts.congestedMs ?? 200;
  const stats: ConnectionGateStats = { handedOver: 0, gone: 0, shed: 0 };
  // Connections with their first bytes, oldest first. Connections still without bytes are only in `all`.
  let ready: Pending[] = [];
  const all = new Set<Pending>();
  let live = 0;
  // Turns so far: a turn runs once per event-loop iteration while connections wait.
  let iteration = 0;
  let scheduled = false;
  let closed = false;

  const drop = (p: Pending): void => {
    p.detach();
    all.delete(p);
    p.socket.destroy();
  };

  const turn = (): void => {
    scheduled = false;
    iteration++;
    // Gone ones stay in `ready` until here (cheaper than a search each time one goes).
    if (ready.length !== live) ready = ready.filter((p) => p.inReady);
    // `ready` is in arrival order: the ones whose bytes came at least a poll ago are a prefix of it.
    let eligible = ready.length;
    while (eligible > 0 && (ready[eligible - 1] as Pending).seenAt >= iteration - 1) eligible--;
    const lifo =
      opts.order === 'lifo' ||
      (opts.order === 'adaptive' && eligible > 0 && now() - (ready[0] as Pending).since >= congestedMs);
    const take = lifo
      ? ready.splice(Math.max(0, eligible - opts.batch), Math.min(eligible, opts.batch)).reverse()
      : ready.splice(0, Math.min(eligible, opts.batch));
    for (const p of take) {
      p.inReady = false;
      live--;
      p.detach();
      all.delete(p);
      p.socket.pause();
      p.socket.unshift(p.chunks.length === 1 ? (p.chunks[0] as Buffer) : Buffer.concat(p.chunks));
      stats.handedOver++;
      opts.handOver(p.socket);
    }
    if (ready.length > 0) schedule();
  };
  const schedule = (): void => {
    if (scheduled || closed) return;
    scheduled = true;
    setImmediate(turn);
  };

  return {
    admit(socket: Socket): void {
      if (closed) {
        socket.destroy();
        return;
      }
      const p: Pending = { socket, chunks: [], gone: false, seenAt: 0, since: 0, inReady: false, detach: () => {} };
      const onData = (chunk: Buffer): void => {
        p.chunks.push(chunk);
        if (p.chunks.length > 1) return; // already waiting
        ready.push(p);
        p.seenAt = iteration;
        p.since = now();
        p.inReady = true;
        live++;
        // Past the bound, the oldest waiting connection is closed (skipping ones already gone).
        while (live > opts.maxWaiting) {
          const oldest = ready.shift() as Pending;
          if (!oldest.inReady) continue; // gone
          oldest.inReady = false;
          live--;
          stats.shed++;
          drop(oldest);
        }
        schedule();
      };
      const onGone = (): void => {
        if (p.gone) return;
        p.gone = true;
        stats.gone++;
        if (p.inReady) {
          p.inReady = false;
          live--;
        }
        drop(p);
      };
      socket.on('data', onData);
      socket.on('end', onGone);
      socket.on('close', onGone);
      socket.on('error', onGone);
      p.detach = () => {
        socket.off('data', onData);
        socket.off('end', onGone);
        socket.off('close', onGone);
        socket.off('error', onGone);
      };
      all.add(p);
    },
    get waiting() {
      return live;
    },
    stats,
    close(): void {
      closed = true;
      for (const p of [...all]) drop(p);
      ready.length = 0;
      live = 0;
    },
  };
}
