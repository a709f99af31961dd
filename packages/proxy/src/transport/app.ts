// The app behind the inbound proxy: every request and connection to the pod goes to 127.0.0.1 on the
// port it was sent to (its original destination), one Endpoint per port.
import { plainEndpoint, type Endpoint } from '../targets.js';

export const APP_HOST = '127.0.0.1';

export class AppEndpoints {
  private readonly byPort = new Map<number, Endpoint>();

  of(port: number): Endpoint {
    let ep = this.byPort.get(port);
    if (!ep) this.byPort.set(port, (ep = plainEndpoint(APP_HOST, port)));
    return ep;
  }
}
