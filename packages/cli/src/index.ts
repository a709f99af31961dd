// @minimesh/cli: the commands as functions, for tests and other tools.
export { createMeshCerts, type MeshCerts, type MeshCertsOptions } from './certs.js';
export { injectObject, injectCommand, toOverrides, loadInjectConfig } from './commands/inject.js';
export { uninjectObject, uninjectCommand } from './commands/uninject.js';
export { certsCommand } from './commands/certs.js';
export { TEMPLATE_PATHS, parseManifests, formatManifests } from './manifest.js';
export type { Command, CommandIO } from './io.js';
