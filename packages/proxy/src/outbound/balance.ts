// Outbound balancing: P2C over peak-EWMA across the target's endpoints.
import { pickP2c } from '../balance/p2c-peak-ewma.js';
import type { Endpoint } from '../destination/resolver.js';
import type { Target } from './discover.js';

/** The endpoint to use for this request/connection, or the plain original destination. */
export type Pick = { endpoint: Endpoint } | { ip: string; port: number; endpoint?: undefined };

export function pickEndpoint(target: Target): Pick | undefined {
  if (target.kind === 'endpoint') return { endpoint: target.endpoint };
  if (target.kind === 'forward') return { ip: target.ip, port: target.port };
  const ep = pickP2c(target.set.list);
  return ep ? { endpoint: ep } : undefined;
}
