// The mesh configuration: what the chart renders into the `minimesh-config` ConfigMap, what the injector
// reads, and what the proxy and proxy-init are started with. One schema, one set of defaults.
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { parseCidrList, parsePortRanges } from './parse.js';
import { MINIMESH_VERSION } from './version.js';
import { DEFAULT_INBOUND_POLICIES } from './inbound-policies.js';

const port = z.number().int().min(1).max(65535);
const portList = z.string().superRefine((value, ctx) => {
  try {
    parsePortRanges('ports', value);
  } catch (err) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message: 'a comma-separated list of ports or ranges lo-hi, e.g. "4567,4568,5000-5010"',
    });
    void err;
  }
});
const cidrList = z.string().superRefine((value, ctx) => {
  try {
    parseCidrList('cidrs', value);
  } catch {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message: 'a comma-separated list of CIDRs, e.g. "10.0.0.0/8,fd00::/8"',
    });
  }
});
const logLevel = z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']);
const image = z.object({
  name: z.string().min(1),
  version: z.string().min(1),
  pullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).default('IfNotPresent'),
});
const quantity = z
  .string()
  .regex(/^\d+(\.\d+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$/, 'a Kubernetes quantity such as 100m, 20Mi or 1')
  .or(z.literal(''));

export const meshConfigSchema = z
  .object({
    /** Namespace of the control plane. */
    controlPlaneNamespace: z.string().min(1).default('minimesh'),
    clusterDomain: z.string().min(1).default('cluster.local'),
    /** Empty means clusterDomain. */
    identityTrustDomain: z.string().default(''),
    /** PEM bundle of the trust anchors (roots). The chart fills it from identityTrustAnchorsPEM. */
    identityTrustAnchorsPEM: z.string().default(''),
    /** Networks inside the cluster (pod and service ranges). */
    clusterNetworks: cidrList.default('10.0.0.0/8,100.64.0.0/10,172.16.0.0/12,192.168.0.0/16,fd00::/8'),
    proxy: z
      .object({
        image: image.default({ name: 'ghcr.io/minimesh/proxy', version: MINIMESH_VERSION, pullPolicy: 'IfNotPresent' }),
        uid: z.number().int().min(1).default(2102),
        gid: z.number().int().min(-1).default(-1),
        ports: z
          .object({
            admin: port.default(4191),
            control: port.default(4190),
            inbound: port.default(4143),
            outbound: port.default(4140),
          })
          .default({}),
        logLevel: logLevel.default('info'),
        logFormat: z.enum(['plain', 'json']).default('plain'),
        /** Ports whose traffic is never protocol-detected (server-speaks-first protocols). */
        opaquePorts: portList.default('25,587,3306,4444,5432,6379,9300,11211'),
        /** Run the proxy as a native sidecar (Kubernetes ≥ 1.29). */
        nativeSidecar: z.boolean().default(true),
        enableShutdownEndpoint: z.boolean().default(false),
        resources: z
          .object({
            cpu: z.object({ request: quantity.default('100m'), limit: quantity.default('') }).default({}),
            memory: z.object({ request: quantity.default('20Mi'), limit: quantity.default('250Mi') }).default({}),
          })
          .default({}),
        connectTimeout: z.string().default('1s'),
        detectTimeout: z.string().default('10s'),
        /** What a port admits when no Server selects it (docs/policy.md). */
        defaultInboundPolicy: z.enum(DEFAULT_INBOUND_POLICIES).default('all-unauthenticated'),
        /** The tap service's identity (viz): the only client of the proxies' tap servers; empty: no tap. */
        tapSvcName: z.string().default(''),
      })
      .default({}),
    proxyInit: z
      .object({
        image: image.default({
          name: 'ghcr.io/minimesh/proxy-init',
          version: MINIMESH_VERSION,
          pullPolicy: 'IfNotPresent',
        }),
        iptablesMode: z.enum(['nft', 'legacy', 'plain']).default('nft'),
        /** Extra inbound ports never redirected (the proxy's admin and control ports are always added). */
        ignoreInboundPorts: portList.default('4567,4568'),
        ignoreOutboundPorts: portList.default(''),
        /** The API server's ports, never redirected outbound. */
        kubeAPIServerPorts: portList.default('443,6443'),
        skipSubnets: cidrList.default(''),
        ipv6: z.boolean().default(false),
        closeWaitTimeoutSecs: z.number().int().min(0).default(0),
        xtMountPath: z.string().default('/run'),
      })
      .default({}),
    /**
     * CNI mode (docs/cni.md): the minimesh-cni plugin writes each meshed pod's rules when its sandbox is
     * created, and the injector adds the unprivileged network validator instead of proxy-init.
     */
    cni: z
      .object({
        enabled: z.boolean().default(false),
        validator: z
          .object({
            /** Where the validator connects: outside the pod, nothing answering (TEST-NET-1 by default). */
            connectAddr: z
              .string()
              .regex(
                /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]):\d{1,5}$/,
                'an IP address and port, e.g. 192.0.2.2:20001',
              )
              .default('192.0.2.2:20001'),
            /** The validator's uid: never the proxy's, so that its connection is redirected like the app's. */
            uid: z.number().int().min(1).default(65534),
            timeout: z.string().default('10s'),
          })
          .default({}),
      })
      .default({}),
    identity: z
      .object({
        /** host:port of the identity service as the proxies dial it. */
        address: z.string().default(''),
        tokenAudience: z.string().min(1).default('identity.minimesh.io'),
        issuanceLifetime: z.string().default('24h'),
        clockSkewAllowance: z.string().default('20s'),
      })
      .default({}),
    destination: z
      .object({
        address: z.string().default(''),
      })
      .default({}),
    /** The policy controller (it runs in the destination pod). */
    policy: z
      .object({
        address: z.string().default(''),
      })
      .default({}),
  })
  .passthrough();

export type MeshConfig = z.infer<typeof meshConfigSchema>;

/**
 * Validates a configuration object (parsed JSON or YAML), filling defaults.
 * Throws ConfigError naming the first bad field, its value and what was expected.
 */
export function parseMeshConfig(input: unknown): MeshConfig {
  const result = meshConfigSchema.safeParse(input ?? {});
  if (result.success) return withDerivedDefaults(result.data);
  const issue = result.error.issues[0] as z.ZodIssue;
  const field = issue.path.join('.') || '(root)';
  const value = issue.path.reduce<unknown>(
    (v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k as string] : undefined),
    input,
  );
  throw new ConfigError(field, value, describeIssue(issue), { cause: result.error });
}

/** The defaults alone. */
export function defaultMeshConfig(): MeshConfig {
  return parseMeshConfig({});
}

function describeIssue(issue: z.ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.expected;
    case 'invalid_enum_value':
      return `one of ${issue.options.join(', ')}`;
    case 'too_small':
      return `a value of at least ${String(issue.minimum)}`;
    case 'too_big':
      return `a value of at most ${String(issue.maximum)}`;
    // The rest in zod's own words.
    case 'custom':
    case 'invalid_arguments':
    case 'invalid_date':
    case 'invalid_intersection_types':
    case 'invalid_literal':
    case 'invalid_return_type':
    case 'invalid_string':
    case 'invalid_union':
    case 'invalid_union_discriminator':
    case 'not_finite':
    case 'not_multiple_of':
    case 'unrecognized_keys':
      return issue.message;
  }
}

function withDerivedDefaults(cfg: MeshConfig): MeshConfig {
  const ns = cfg.controlPlaneNamespace;
  const trustDomain = cfg.identityTrustDomain || cfg.clusterDomain;
  return {
    ...cfg,
    identityTrustDomain: trustDomain,
    identity: {
      ...cfg.identity,
      address: cfg.identity.address || `minimesh-identity.${ns}.svc.${cfg.clusterDomain}:8080`,
    },
    destination: {
      ...cfg.destination,
      address: cfg.destination.address || `minimesh-dst.${ns}.svc.${cfg.clusterDomain}:8086`,
    },
    policy: {
      ...cfg.policy,
      address: cfg.policy.address || `minimesh-policy.${ns}.svc.${cfg.clusterDomain}:8090`,
    },
  };
}
