// MINIMESH_E2E_DRIVER=local (default) | k3d.
import { createK3dDriver } from './k3d.js';
import { createLocalDriver } from './local.js';
import type { Driver } from './types.js';

export type { AuditEvent, Driver } from './types.js';

export function selectDriver(name = process.env.MINIMESH_E2E_DRIVER ?? 'local'): Driver {
  switch (name) {
    case 'local':
      return createLocalDriver();
    case 'k3d':
      return createK3dDriver();
    default:
      throw new Error(`MINIMESH_E2E_DRIVER: "${name}" is not valid: expected local or k3d`);
  }
}
