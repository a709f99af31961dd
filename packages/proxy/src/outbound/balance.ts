// Outbound balance: Concrete → Endpoint, P2C over peak-EWMA across a balanced set's endpoints.
import { pickP2c } from '../balance/p2c-peak-ewma.js';
import { ProxyError } from '../errors.js';
import type { Concrete, Endpoint } from '../targets.js';

export function balance(concrete: Concrete): Endpoint {
  if (concrete.kind !== 'balanced') return concrete.endpoint;
  const ep = pickP2c(concrete.set.list);
  if (!ep) throw new ProxyError('MINIMESH_PROXY_NO_ENDPOINTS', `service ${concrete.authority}: no endpoints`);
  return ep;
}
