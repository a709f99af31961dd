// The client side of apps/pod-agent.mjs's control API: a POST on the unix socket the agent listens on
// inside a test pod (reachable from the host across network namespaces), its JSON answer parsed.
import { request } from 'node:http';

/** Calls `op` (h1, h2, ws, tcp, fetch) of the client agent listening on `socketPath` with `body`. */
export function callAgent<T = unknown>(socketPath: string, op: string, body: unknown, timeoutMs = 60_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: `/${op}`, method: 'POST', timeout: timeoutMs, agent: false }, (res) => {
      let b = '';
      res.on('data', (c: Buffer) => (b += c.toString()));
      res.on('end', () => resolve(JSON.parse(b) as T));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
