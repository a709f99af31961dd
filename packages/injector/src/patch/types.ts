// The slice of the Kubernetes Pod shape the patch reads and writes. Unknown fields pass through
// untouched: the patch only ever adds (or, for uninject, removes) the fields listed here.
export type StringMap = Record<string, string>;

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  annotations?: StringMap;
  labels?: StringMap;
  [key: string]: unknown;
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
  protocol?: string;
  [key: string]: unknown;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string; apiVersion?: string }; [key: string]: unknown };
}

export interface HttpProbe {
  httpGet: { path: string; port: number | string; scheme?: string };
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
}

export interface Container {
  name: string;
  image?: string;
  imagePullPolicy?: string;
  args?: string[];
  env?: EnvVar[];
  ports?: ContainerPort[];
  restartPolicy?: string;
  startupProbe?: HttpProbe;
  livenessProbe?: HttpProbe;
  readinessProbe?: HttpProbe;
  resources?: { requests?: StringMap; limits?: StringMap };
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  terminationMessagePolicy?: string;
  [key: string]: unknown;
}

export interface Volume {
  name: string;
  [key: string]: unknown;
}

export interface PodSpec {
  containers?: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  hostNetwork?: boolean;
  serviceAccountName?: string;
  [key: string]: unknown;
}

/** A Pod, or the pod template of a workload (same metadata/spec shape). */
export interface PodLike {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: PodSpec;
  [key: string]: unknown;
}

/** RFC 6902 operations the injector emits. */
export type PatchOperation =
  | { op: 'add'; path: string; value: unknown }
  | { op: 'replace'; path: string; value: unknown }
  | { op: 'remove'; path: string };

/** Why a pod was left alone; stable strings, used as metric labels and audit annotations. */
export type SkipReason =
  | 'not-create'
  | 'injection-disabled'
  | 'not-enabled'
  | 'invalid-inject-annotation'
  | 'already-injected'
  | 'host-network'
  | 'control-plane'
  | 'system-namespace';

export interface PatchResult {
  /** Empty when skipped. */
  patch: PatchOperation[];
  skipped?: { reason: SkipReason; message: string };
  /** Human-readable, one line each (AdmissionReview warnings): malformed overrides and the like. */
  warnings: string[];
}
