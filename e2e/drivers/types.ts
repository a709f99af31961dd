// What the e2e specs (and the demo) need from a cluster. Two implementations: local (the local cluster
// of packages/local-cluster, here and in CI) and k3d (the Linkerd tutorial's k3d cluster, on machines with Docker).
import type { RunResult } from '../src/tools.js';

/** A host outside the cluster networks, at 203.0.113.10 (TEST-NET-3), that egress specs send traffic to. */
export interface OutsideHost {
  readonly ip: string;
  /** What its app printed so far. */
  log(): Promise<string>;
  /** Stops it and removes what was made for it. */
  remove(): Promise<void>;
}

/** One audit.k8s.io/v1 Event, the fields the specs read. */
export interface AuditEvent {
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string };
  objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string; subresource?: string };
  responseStatus?: { code?: number };
  annotations?: Record<string, string>;
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  requestObject?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  responseObject?: any;
}

export interface Driver {
  readonly name: 'local' | 'k3d';
  /** Makes sure the cluster runs and answers; returns a line describing it. */
  setup(): Promise<string>;
  /** Flags that point kubectl and helm at the cluster. */
  kubeArgs(): string[];
  kubectl(args: readonly string[], input?: string): Promise<RunResult>;
  helm(args: readonly string[]): Promise<RunResult>;
  /** Extra `helm install` flags this cluster needs beside the Linkerd tutorial's (the local one: pull policy Never). */
  chartArgs?(): string[];
  /** imagePullPolicy of the e2e's own pods (Never where images are imported and cannot be pulled). */
  readonly imagePullPolicy?: 'Never' | 'IfNotPresent';
  /** The image of an e2e fixture (e2e/fixtures/<name>.mjs). */
  fixtureImage(name: string): string;
  /** Runs a command in a netadmin debug container in the pod (its network namespace, NET_ADMIN, NET_RAW). */
  execInPod(namespace: string, pod: string, command: readonly string[]): Promise<RunResult>;
  /** `iptables-save -t nat` of the pod's network namespace. */
  natRules(namespace: string, pod: string): Promise<string>;
  /** A container's output so far. */
  logs(namespace: string, pod: string, container: string): Promise<string>;
  /** Every event of the API server's audit log so far. */
  auditEvents(): Promise<AuditEvent[]>;
  /**
   * SIGKILLs every process of the pod (app and proxy containers, not the sandbox), as a crash or the
   * OOM killer would: no SIGTERM, no drain. The kubelet then restarts the containers.
   */
  killPodProcesses(namespace: string, pod: string): Promise<string>;
  /** Stops kube-apiserver (every watch and log stream through it is cut) and starts it again; resolves once /readyz answers. */
  restartApiServer(): Promise<string>;
  /**
   * An outside host running `app` (a CommonJS Node script that prints a line with `listening` once it
   * serves), reachable from the pods at 203.0.113.10 and from nowhere else. `tag`: 1-6 lowercase
   * letters or digits, unique per spec.
   */
  outsideHost(tag: string, app: string): Promise<OutsideHost>;
  /** Where the kubeconfig is, for a human (demo --keep). */
  kubeconfigHint(): string;
}
