// The names of the default inbound policies, on their own: the proxy needs the list and nothing else of
// the mesh configuration, and importing it from mesh-config.ts would load zod and build every schema in
// each proxy (about 2 MB of private memory per proxy, docs/proxy.md "Tried and not kept").

/** Linkerd's default inbound policies (the policy controller's DEFAULT_POLICIES). */
export const DEFAULT_INBOUND_POLICIES = [
  'all-unauthenticated',
  'all-authenticated',
  'cluster-unauthenticated',
  'cluster-authenticated',
  'deny',
  'audit',
] as const;
export type DefaultInboundPolicy = (typeof DEFAULT_INBOUND_POLICIES)[number];
