// Graceful drain, shared by the inbound and outbound stacks: stop accepting, close idle HTTP/1
// connections and send GOAWAY on HTTP/2 sessions, wait for the open sockets to finish (re-closing idle
// HTTP/1 connections as requests complete) up to the grace period, then cut what is left.
import type { CallerSession } from './http/h2-engine.js';
import type { Server, Socket } from 'node:net';

export interface DrainParts {
  server: Server;
  /** The HTTP/1 server (h1-server.ts): its idle connections are closed. */
  h1: { closeIdleConnections(): void };
  serverSessions: ReadonlySet<CallerSession>;
  sockets: ReadonlySet<Socket>;
  /** Releases what the stack holds beyond its sockets (upstream pools). */
  release: () => void;
}

export function drainConnections(parts: DrainParts, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    parts.server.close();
    parts.h1.closeIdleConnections();
    for (const s of parts.serverSessions) s.close();
    const deadline = setTimeout(finish, graceMs);
    const poll = setInterval(() => {
      if (parts.sockets.size === 0) finish();
      else parts.h1.closeIdleConnections();
    }, 100);
    function finish() {
      clearTimeout(deadline);
      clearInterval(poll);
      for (const s of parts.sockets) s.destroy();
      parts.release();
      resolve();
    }
  });
}
