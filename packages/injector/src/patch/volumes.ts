// The volumes the injector adds: the xtables lock for proxy-init (not in CNI mode), the proxy's in-memory key directory
// and its projected service-account token (audience identity.minimesh.io).
import type { MeshConfig } from '@minimesh/config';
import type { Volume } from './types.js';

export const VOLUME_NAMES = {
  xtablesLock: 'minimesh-proxy-init-xtables-lock',
  identityEndEntity: 'minimesh-identity-end-entity',
  identityToken: 'minimesh-identity-token',
} as const;

export const IDENTITY_DIR = '/var/run/minimesh/identity';
export const TOKEN_DIR = '/var/run/secrets/tokens';
export const TOKEN_FILE = `${TOKEN_DIR}/minimesh-identity-token`;
export const TOKEN_EXPIRATION_SECONDS = 86400;

/** CNI mode has no proxy-init container, so no xtables lock volume. */
export function buildVolumes(config: MeshConfig): Volume[] {
  return [
    ...(config.cni.enabled ? [] : [{ name: VOLUME_NAMES.xtablesLock, emptyDir: {} }]),
    { name: VOLUME_NAMES.identityEndEntity, emptyDir: { medium: 'Memory' } },
    {
      name: VOLUME_NAMES.identityToken,
      projected: {
        sources: [
          {
            serviceAccountToken: {
              audience: config.identity.tokenAudience,
              expirationSeconds: TOKEN_EXPIRATION_SECONDS,
              path: 'minimesh-identity-token',
            },
          },
        ],
      },
    },
  ];
}
