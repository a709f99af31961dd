// The policy.minimesh.io CustomResourceDefinitions, as data: the one source for the minimesh-crds chart's
// templates/policy-crds.yaml (scripts/generate-crds.ts writes it, a test keeps it current). Kinds,
// fields and versions are Linkerd's (policy.linkerd.io); unlike Linkerd, which checks most of this in
// an admission webhook, the schemas themselves reject malformed objects (enums, patterns, CEL rules).
import { POLICY_GROUP } from './resources/kinds.js';
import { DEFAULT_POLICIES } from './model.js';
import { PROXY_PROTOCOLS } from './resources/server.js';

type Schema = Record<string, unknown>;

const DNS_GROUP = '^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const KIND = '^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$';
const NAMESPACE = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const HOSTNAME = '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const HEADER_NAME = "^[A-Za-z0-9!#$%&'*+\\-.^_\\x60|~]+$";
const DURATION = '^([0-9]{1,5}(h|m|s|ms)){1,4}$';

const cidrRule = {
  rule: 'isCIDR(self) || isIP(self)',
  message: 'must be a CIDR such as 10.0.0.0/8 or fd00::/8, or an IP address',
};

const str = (description: string, extra: Schema = {}): Schema => ({ type: 'string', description, ...extra });

const labelSelector = (what: string): Schema => ({
  type: 'object',
  description: `Selects ${what} in the same namespace: matchLabels AND matchExpressions; an empty selector selects all.`,
  properties: {
    matchLabels: { type: 'object', additionalProperties: { type: 'string' } },
    matchExpressions: {
      type: 'array',
      maxItems: 32,
      items: {
        type: 'object',
        required: ['key', 'operator'],
        properties: {
          key: { type: 'string', minLength: 1, maxLength: 317 },
          operator: { type: 'string', enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'] },
          values: { type: 'array', maxItems: 64, items: { type: 'string', maxLength: 63 } },
        },
        'x-kubernetes-validations': [
          {
            rule: "(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",
            message: 'In and NotIn need values; Exists and DoesNotExist take none',
          },
        ],
      },
    },
  },
});

const ref = (description: string, opts: { namespaced?: boolean; nameRequired?: boolean } = {}): Schema => ({
  type: 'object',
  description,
  required: opts.nameRequired === false ? ['kind'] : ['kind', 'name'],
  properties: {
    group: str('API group of the referent; empty means the core group.', { maxLength: 253, pattern: DNS_GROUP }),
    kind: str('Kind of the referent.', { minLength: 1, maxLength: 63, pattern: KIND }),
    name: str('Name of the referent.', { minLength: 1, maxLength: 253 }),
    ...(opts.namespaced
      ? {
          namespace: str("Namespace of the referent; empty means the referrer's own.", {
            maxLength: 63,
            pattern: `^$|${NAMESPACE}`,
          }),
        }
      : {}),
  },
});

const port: Schema = {
  description: 'A port number (1-65535) or the name of a container port.',
  'x-kubernetes-int-or-string': true,
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  'x-kubernetes-validations': [
    {
      rule: "type(self) == int ? (self >= 1 && self <= 65535) : self.matches('^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$') && self.matches('[a-z]')",
      message:
        'must be a port number from 1 to 65535 or a port name (lower-case letters, digits and dashes, at most 15)',
    },
  ],
};

function serverSchema(version: 'v1alpha1' | 'v1beta1' | 'v1beta2' | 'v1beta3'): Schema {
  const externalWorkloads = version === 'v1beta2' || version === 'v1beta3';
  const spec: Schema = {
    type: 'object',
    required: ['port'],
    properties: {
      podSelector: labelSelector('pods'),
      ...(externalWorkloads ? { externalWorkloadSelector: labelSelector('ExternalWorkloads') } : {}),
      port,
      proxyProtocol: str('How inbound connections on the port are handled: detected, or a known protocol.', {
        enum: [...PROXY_PROTOCOLS],
        default: 'unknown',
      }),
      ...(version === 'v1beta3'
        ? {
            accessPolicy: str('What the Server admits besides its AuthorizationPolicies: a default policy name.', {
              enum: [...DEFAULT_POLICIES],
              default: 'deny',
            }),
          }
        : {}),
    },
  };
  if (externalWorkloads) spec.oneOf = [{ required: ['podSelector'] }, { required: ['externalWorkloadSelector'] }];
  else (spec.required as string[]).push('podSelector');
  return spec;
}

const headerMod: Schema = {
  type: 'object',
  properties: Object.fromEntries(
    ['add', 'set']
      .map((k): [string, Schema] => [
        k,
        {
          type: 'array',
          maxItems: 16,
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
          items: {
            type: 'object',
            required: ['name', 'value'],
            properties: {
              name: { type: 'string', minLength: 1, maxLength: 256, pattern: HEADER_NAME },
              value: { type: 'string', minLength: 1, maxLength: 4096 },
            },
          },
        },
      ])
      .concat([['remove', { type: 'array', maxItems: 16, items: { type: 'string' } }]]),
  ),
};

const filters = (forBackend: boolean): Schema => ({
  type: 'array',
  maxItems: 16,
  description: forBackend
    ? 'Filters applied when a request goes to this backend.'
    : 'Filters applied to matching requests.',
  items: {
    type: 'object',
    required: ['type'],
    properties: {
      type: { type: 'string', enum: ['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestRedirect'] },
      requestHeaderModifier: headerMod,
      responseHeaderModifier: headerMod,
      requestRedirect: {
        type: 'object',
        properties: {
          scheme: { type: 'string', enum: ['http', 'https'] },
          hostname: { type: 'string', minLength: 1, maxLength: 253, pattern: HOSTNAME },
          path: {
            type: 'object',
            required: ['type'],
            properties: {
              type: { type: 'string', enum: ['ReplaceFullPath', 'ReplacePrefixMatch'] },
              replaceFullPath: { type: 'string', maxLength: 1024 },
              replacePrefixMatch: { type: 'string', maxLength: 1024 },
            },
          },
          port: { type: 'integer', minimum: 1, maximum: 65535 },
          statusCode: { type: 'integer', enum: [301, 302], default: 302 },
        },
      },
    },
    'x-kubernetes-validations': [
      {
        rule: "self.type == 'RequestHeaderModifier' ? has(self.requestHeaderModifier) : self.type == 'ResponseHeaderModifier' ? has(self.responseHeaderModifier) : has(self.requestRedirect)",
        message:
          'the filter must carry the field its type names (e.g. requestHeaderModifier for RequestHeaderModifier)',
      },
    ],
  },
});

const valueMatch = (what: string, name: Schema): Schema => ({
  type: 'array',
  maxItems: 16,
  description: `${what} the request must carry.`,
  items: {
    type: 'object',
    required: ['name', 'value'],
    properties: {
      type: { type: 'string', enum: ['Exact', 'RegularExpression'], default: 'Exact' },
      name,
      value: { type: 'string', minLength: 1, maxLength: 4096 },
    },
  },
});

function httpRouteSchema(version: 'v1alpha1' | 'v1beta1' | 'v1beta2' | 'v1beta3'): Schema {
  const rule: Schema = {
    type: 'object',
    properties: {
      matches: {
        type: 'array',
        maxItems: 8,
        default: [{ path: { type: 'PathPrefix', value: '/' } }],
        items: {
          type: 'object',
          properties: {
            path: {
              type: 'object',
              default: { type: 'PathPrefix', value: '/' },
              properties: {
                type: { type: 'string', enum: ['Exact', 'PathPrefix', 'RegularExpression'], default: 'PathPrefix' },
                value: { type: 'string', maxLength: 1024, default: '/' },
              },
              'x-kubernetes-validations': [
                {
                  rule: "self.type == 'RegularExpression' || self.value.startsWith('/')",
                  message: 'an Exact or PathPrefix path must start with "/"',
                },
              ],
            },
            headers: valueMatch('Headers', { type: 'string', minLength: 1, maxLength: 256, pattern: HEADER_NAME }),
            queryParams: valueMatch('Query parameters', { type: 'string', minLength: 1, maxLength: 256 }),
            method: {
              type: 'string',
              enum: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'],
            },
          },
        },
      },
      filters: filters(false),
      backendRefs: {
        type: 'array',
        maxItems: 16,
        description: 'Where matching requests go (outbound routes); empty means the parent Service.',
        items: {
          type: 'object',
          required: ['name'],
          properties: {
            group: str('API group of the backend; empty means core.', {
              default: '',
              maxLength: 253,
              pattern: DNS_GROUP,
            }),
            kind: str('Kind of the backend.', { default: 'Service', minLength: 1, maxLength: 63, pattern: KIND }),
            name: { type: 'string', minLength: 1, maxLength: 253 },
            namespace: { type: 'string', minLength: 1, maxLength: 63, pattern: NAMESPACE },
            port: { type: 'integer', format: 'int32', minimum: 1, maximum: 65535 },
            weight: { type: 'integer', format: 'int32', minimum: 0, maximum: 1_000_000, default: 1 },
            filters: filters(true),
          },
        },
      },
    },
  };
  if (version === 'v1beta3')
    (rule.properties as Schema).timeouts = {
      type: 'object',
      description: 'Timeouts of requests matching the rule (a duration such as 10s, 500ms or 1h30m; 0s means none).',
      properties: {
        request: str('Time allowed for the whole request and response.', { pattern: DURATION }),
        backendRequest: str('Time allowed for each attempt to a backend.', { pattern: DURATION }),
      },
    };
  return {
    type: 'object',
    properties: {
      parentRefs: {
        type: 'array',
        maxItems: 32,
        description:
          'What the route attaches to: a Server (inbound), a Service port (outbound, group core) or an EgressNetwork (outbound, traffic leaving the cluster).',
        items: {
          type: 'object',
          required: ['name'],
          properties: {
            group: str('API group of the parent.', { default: POLICY_GROUP, maxLength: 253, pattern: DNS_GROUP }),
            kind: str('Kind of the parent.', { default: 'Gateway', minLength: 1, maxLength: 63, pattern: KIND }),
            namespace: { type: 'string', minLength: 1, maxLength: 63, pattern: NAMESPACE },
            name: { type: 'string', minLength: 1, maxLength: 253 },
            sectionName: { type: 'string', minLength: 1, maxLength: 253 },
            port: { type: 'integer', format: 'int32', minimum: 1, maximum: 65535 },
          },
        },
      },
      hostnames: {
        type: 'array',
        maxItems: 16,
        items: { type: 'string', minLength: 1, maxLength: 253, pattern: HOSTNAME },
      },
      rules: {
        type: 'array',
        maxItems: 16,
        default: [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }] }],
        items: rule,
      },
    },
  };
}

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string };
  spec: Schema;
}

interface VersionSpec {
  name: string;
  storage: boolean;
  deprecated?: string;
  spec: Schema;
  printer?: Array<{ name: string; type: string; jsonPath: string; description?: string }>;
  statusSubresource?: boolean;
}

function crd(kind: string, plural: string, shortNames: string[], versions: VersionSpec[]): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${POLICY_GROUP}` },
    spec: {
      group: POLICY_GROUP,
      names: {
        kind,
        plural,
        singular: kind.toLowerCase(),
        listKind: `${kind}List`,
        ...(shortNames.length ? { shortNames } : {}),
      },
      scope: 'Namespaced',
      versions: versions.map((v) => ({
        name: v.name,
        served: true,
        storage: v.storage,
        ...(v.deprecated ? { deprecated: true, deprecationWarning: v.deprecated } : {}),
        schema: {
          openAPIV3Schema: {
            type: 'object',
            required: ['spec'],
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec: v.spec,
              ...(v.statusSubresource
                ? { status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }
                : {}),
            },
          },
        },
        ...(v.statusSubresource ? { subresources: { status: {} } } : {}),
        ...(v.printer ? { additionalPrinterColumns: v.printer } : {}),
      })),
    },
  };
}

const serverPrinter = (withAccess: boolean) => [
  { name: 'Port', type: 'string', jsonPath: '.spec.port', description: 'The selected port' },
  { name: 'Protocol', type: 'string', jsonPath: '.spec.proxyProtocol', description: 'How its traffic is handled' },
  ...(withAccess ? [{ name: 'Access Policy', type: 'string', jsonPath: '.spec.accessPolicy' }] : []),
];

export function policyCrds(): CustomResourceDefinition[] {
  const authnRef = ref(
    'An authentication every client must satisfy: a MeshTLSAuthentication, NetworkAuthentication or ServiceAccount.',
    {
      namespaced: true,
    },
  );
  authnRef['x-kubernetes-validations'] = [
    {
      rule: `(self.kind in ['MeshTLSAuthentication', 'NetworkAuthentication'] && has(self.group) && self.group == '${POLICY_GROUP}') || (self.kind == 'ServiceAccount' && (!has(self.group) || self.group in ['', 'core']))`,
      message: `must be a ${POLICY_GROUP} MeshTLSAuthentication or NetworkAuthentication, or a ServiceAccount`,
    },
  ];
  const target = ref('What the policy authorizes clients to: a Server, an HTTPRoute, or the whole Namespace.');
  target['x-kubernetes-validations'] = [
    {
      rule: `(self.kind in ['Server', 'HTTPRoute'] && has(self.group) && self.group == '${POLICY_GROUP}') || (self.kind == 'Namespace' && (!has(self.group) || self.group in ['', 'core']))`,
      message: `must be a ${POLICY_GROUP} Server or HTTPRoute, or a Namespace`,
    },
  ];
  const identityRef = ref('A ServiceAccount (its identity) or a Namespace (every identity in it).', {
    namespaced: true,
  });
  identityRef['x-kubernetes-validations'] = [
    {
      rule: "self.kind in ['ServiceAccount', 'Namespace'] && (!has(self.group) || self.group in ['', 'core'])",
      message: 'must be a ServiceAccount or a Namespace',
    },
  ];
  const httpRoutePrinter = [{ name: 'Hostnames', type: 'string', jsonPath: '.spec.hostnames' }];
  return [
    crd(
      'Server',
      'servers',
      ['srv'],
      [
        {
          name: 'v1alpha1',
          storage: false,
          deprecated: `${POLICY_GROUP}/v1alpha1 Server is deprecated; use ${POLICY_GROUP}/v1beta3 Server`,
          spec: serverSchema('v1alpha1'),
          printer: serverPrinter(false),
        },
        {
          name: 'v1beta1',
          storage: false,
          deprecated: `${POLICY_GROUP}/v1beta1 Server is deprecated; use ${POLICY_GROUP}/v1beta3 Server`,
          spec: serverSchema('v1beta1'),
          printer: serverPrinter(false),
        },
        { name: 'v1beta2', storage: false, spec: serverSchema('v1beta2'), printer: serverPrinter(false) },
        { name: 'v1beta3', storage: true, spec: serverSchema('v1beta3'), printer: serverPrinter(true) },
      ],
    ),
    crd(
      'AuthorizationPolicy',
      'authorizationpolicies',
      ['authzpolicy'],
      [
        {
          name: 'v1alpha1',
          storage: true,
          spec: {
            type: 'object',
            description: 'Admits clients that satisfy every required authentication to the target.',
            required: ['targetRef', 'requiredAuthenticationRefs'],
            properties: {
              targetRef: target,
              requiredAuthenticationRefs: {
                type: 'array',
                maxItems: 8,
                description: 'All must be satisfied; if one does not exist, the policy admits nobody.',
                items: authnRef,
                'x-kubernetes-validations': [
                  {
                    rule: "self.filter(r, r.kind == 'NetworkAuthentication').size() <= 1",
                    message: 'at most one NetworkAuthentication',
                  },
                  {
                    rule: "self.filter(r, r.kind in ['MeshTLSAuthentication', 'ServiceAccount']).size() <= 1",
                    message: 'at most one MeshTLSAuthentication or ServiceAccount',
                  },
                ],
              },
            },
          },
        },
      ],
    ),
    crd(
      'MeshTLSAuthentication',
      'meshtlsauthentications',
      ['meshtlsauthn'],
      [
        {
          name: 'v1alpha1',
          storage: true,
          spec: {
            type: 'object',
            description: 'Clients authenticated by mesh TLS identity: any one of these matches.',
            oneOf: [{ required: ['identities'] }, { required: ['identityRefs'] }],
            properties: {
              identities: {
                type: 'array',
                minItems: 1,
                description: 'Identities; "*" matches every identity and "*.<suffix>" every identity ending so.',
                items: { type: 'string', minLength: 1, maxLength: 253 },
              },
              identityRefs: { type: 'array', minItems: 1, maxItems: 64, items: identityRef },
            },
          },
        },
      ],
    ),
    crd(
      'NetworkAuthentication',
      'networkauthentications',
      ['netauthn', 'networkauthn'],
      [
        {
          name: 'v1alpha1',
          storage: true,
          spec: {
            type: 'object',
            description: 'Clients authenticated by their address: any one of these networks matches.',
            required: ['networks'],
            properties: {
              networks: {
                type: 'array',
                minItems: 1,
                maxItems: 64,
                items: {
                  type: 'object',
                  required: ['cidr'],
                  properties: {
                    cidr: {
                      type: 'string',
                      maxLength: 64,
                      description: 'A network, e.g. 10.0.0.0/8; a bare address means just it.',
                      'x-kubernetes-validations': [cidrRule],
                    },
                    except: {
                      type: 'array',
                      maxItems: 64,
                      items: { type: 'string', maxLength: 64, 'x-kubernetes-validations': [cidrRule] },
                    },
                  },
                },
              },
            },
          },
        },
      ],
    ),
    crd(
      'HTTPRoute',
      'httproutes',
      [],
      [
        {
          name: 'v1alpha1',
          storage: false,
          spec: httpRouteSchema('v1alpha1'),
          statusSubresource: true,
          printer: httpRoutePrinter,
        },
        {
          name: 'v1beta1',
          storage: false,
          spec: httpRouteSchema('v1beta1'),
          statusSubresource: true,
          printer: httpRoutePrinter,
        },
        {
          name: 'v1beta2',
          storage: false,
          spec: httpRouteSchema('v1beta2'),
          statusSubresource: true,
          printer: httpRoutePrinter,
        },
        {
          name: 'v1beta3',
          storage: true,
          spec: httpRouteSchema('v1beta3'),
          statusSubresource: true,
          printer: httpRoutePrinter,
        },
      ],
    ),
    rateLimitCrd(),
    egressNetworkCrd(),
  ];
}

/**
 * EgressNetwork v1alpha1, Linkerd's schema (policy.linkerd.io, Linkerd 2.17+): `trafficPolicy` (Allow or
 * Deny) is required; `networks` are CIDRs with exceptions (absent: everything outside the cluster
 * networks). Stricter than Linkerd's, whose schema takes any string: a CIDR must be one (CEL isCIDR).
 */
function egressNetworkCrd(): CustomResourceDefinition {
  const cidr = (description: string): Schema => ({
    type: 'string',
    maxLength: 64,
    description,
    'x-kubernetes-validations': [cidrRule],
  });
  return crd(
    'EgressNetwork',
    'egressnetworks',
    [],
    [
      {
        name: 'v1alpha1',
        storage: true,
        statusSubresource: true,
        spec: {
          type: 'object',
          description:
            'Destinations outside the cluster, and what happens to traffic to them that no route attached to the EgressNetwork describes.',
          required: ['trafficPolicy'],
          properties: {
            trafficPolicy: str(
              'Allow: traffic no route describes goes through; Deny: only traffic a route attached to this EgressNetwork describes goes through (HTTP 403, gRPC PERMISSION_DENIED, TCP refused otherwise).',
              { enum: ['Allow', 'Deny'] },
            ),
            networks: {
              type: 'array',
              maxItems: 64,
              description:
                'The destinations: CIDRs minus their exceptions. Absent or empty: every address outside the cluster networks. Addresses inside the cluster networks are never egress.',
              items: {
                type: 'object',
                required: ['cidr'],
                properties: {
                  cidr: cidr('A network, e.g. 203.0.113.0/24; a bare address means just it.'),
                  except: {
                    type: 'array',
                    maxItems: 64,
                    description: 'Networks or addresses inside cidr that are not part of this EgressNetwork.',
                    items: cidr('A network or address left out.'),
                  },
                },
              },
            },
          },
        },
        printer: [
          { name: 'Traffic_policy', type: 'string', jsonPath: '.spec.trafficPolicy' },
          { name: 'Accepted', type: 'string', jsonPath: ".status.conditions[?(@.type=='Accepted')].status" },
        ],
      },
    ],
  );
}

/**
 * HTTPLocalRateLimitPolicy v1alpha1, Linkerd's schema (policy.linkerd.io), stricter where Linkerd's
 * webhook or controller would refuse: the target must be a Server, a limit is at least 1 request per
 * second (a limit of 0 would silently mean none in the proxy), override clients are ServiceAccounts.
 */
function rateLimitCrd(): CustomResourceDefinition {
  const limit = (description: string): Schema => ({
    type: 'object',
    description,
    required: ['requestsPerSecond'],
    properties: {
      requestsPerSecond: { type: 'integer', format: 'int64', minimum: 1, maximum: 4294967295 },
    },
  });
  const target = ref('The Server whose HTTP requests are limited.');
  target['x-kubernetes-validations'] = [
    {
      rule: `self.kind == 'Server' && has(self.group) && self.group == '${POLICY_GROUP}'`,
      message: `must be a ${POLICY_GROUP} Server`,
    },
  ];
  const client = ref('A client ServiceAccount (its identity).', { namespaced: true });
  client['x-kubernetes-validations'] = [
    {
      rule: "self.kind == 'ServiceAccount' && (!has(self.group) || self.group in ['', 'core'])",
      message: 'must be a ServiceAccount',
    },
  ];
  return crd(
    'HTTPLocalRateLimitPolicy',
    'httplocalratelimitpolicies',
    [],
    [
      {
        name: 'v1alpha1',
        storage: true,
        statusSubresource: true,
        spec: {
          type: 'object',
          description: "Limits the HTTP requests a Server admits per second, in each of its pods' proxies.",
          required: ['targetRef'],
          properties: {
            targetRef: target,
            total: limit('Over all requests to the target; unset: no overall limit.'),
            identity: limit(
              'Per client identity (clients without one share one limit); at most total, if that is set.',
            ),
            overrides: {
              type: 'array',
              maxItems: 64,
              description: 'Limits for particular clients, instead of the per-identity limit.',
              items: {
                type: 'object',
                required: ['requestsPerSecond', 'clientRefs'],
                properties: {
                  requestsPerSecond: { type: 'integer', format: 'int64', minimum: 1, maximum: 4294967295 },
                  clientRefs: { type: 'array', minItems: 1, maxItems: 64, items: client },
                },
              },
            },
          },
        },
        printer: [
          { name: 'Target_kind', type: 'string', jsonPath: '.spec.targetRef.kind' },
          { name: 'Target_name', type: 'string', jsonPath: '.spec.targetRef.name' },
          { name: 'Total_RPS', type: 'integer', jsonPath: '.spec.total.requestsPerSecond' },
          { name: 'Identity_RPS', type: 'integer', jsonPath: '.spec.identity.requestsPerSecond' },
        ],
      },
    ],
  );
}

/** Where the chart keeps the rendered CRDs (relative to the repository root). */
export const CRD_TEMPLATE_PATH = 'charts/minimesh-crds/templates/policy-crds.yaml';

/**
 * The minimesh-crds chart's template: every CRD, with that chart's labels and its keep annotation (so no
 * `helm uninstall` deletes the CRDs, and with them the objects users wrote).
 * `stringify` is the YAML serializer (the caller passes yaml's, so this module needs no YAML library).
 */
export function renderCrdTemplate(stringify: (value: unknown) => string): string {
  const head = [
    '{{- /*',
    'The policy.minimesh.io CRDs. Generated from packages/policy/src/crds.ts by',
    '`npm run generate-crds -w @minimesh/policy`; do not edit by hand (a test checks it is current).',
    '*/}}',
  ];
  const docs = policyCrds().map((c) => {
    const text = stringify(c);
    // Labels go under metadata.name, from the chart's helpers.
    return `---\n${text.replace(
      `  name: ${c.metadata.name}\n`,
      `  name: ${c.metadata.name}\n  labels:\n    {{- include "minimesh-crds.labels" . | nindent 4 }}\n    app.kubernetes.io/component: policy\n  annotations:\n    {{- include "minimesh-crds.annotations" . | nindent 4 }}\n`,
    )}`;
  });
  return `${head.join('\n')}\n${docs.join('')}`;
}
