// AdmissionReview (admission.k8s.io/v1, and v1beta1 which has the same shape) in and out.
import { InjectorError } from '../errors.js';
import type { PatchOperation, PodLike } from '../patch/types.js';

export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  operation: string;
  namespace?: string;
  name?: string;
  dryRun?: boolean;
  object: PodLike;
}

export interface AdmissionResponse {
  uid: string;
  allowed: true;
  patchType?: 'JSONPatch';
  /** base64 of the JSON patch */
  patch?: string;
  warnings?: string[];
  auditAnnotations?: Record<string, string>;
}

export interface AdmissionReview {
  apiVersion: string;
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

export type BadReviewReason = 'malformed-json' | 'no-request' | 'not-a-pod' | 'bad-review';

/** A request that is not a usable AdmissionReview; the webhook answers 400 with the message. */
export class BadReviewError extends InjectorError {
  constructor(
    readonly reason: BadReviewReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('MINIMESH_INJECTOR_BAD_REVIEW', message, options);
  }
}

const API_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Validates an untrusted body. Returns the review's apiVersion (echoed back) and its request. */
export function parseAdmissionReview(body: unknown): { apiVersion: string; request: AdmissionRequest } {
  if (!isObject(body)) throw new BadReviewError('bad-review', 'AdmissionReview: the body is not a JSON object');
  const apiVersion = typeof body.apiVersion === 'string' ? body.apiVersion : '';
  if (body.kind !== 'AdmissionReview' || !API_VERSIONS.includes(apiVersion)) {
    throw new BadReviewError(
      'bad-review',
      `AdmissionReview: got apiVersion ${JSON.stringify(body.apiVersion)} kind ${JSON.stringify(body.kind)}, expected admission.k8s.io/v1 AdmissionReview`,
    );
  }
  const request = body.request;
  if (!isObject(request)) throw new BadReviewError('no-request', 'AdmissionReview: "request" is missing');
  if (typeof request.uid !== 'string' || request.uid === '') {
    throw new BadReviewError('bad-review', 'AdmissionReview: request.uid is missing');
  }
  const kind = isObject(request.kind) ? request.kind : {};
  if ((kind.group ?? '') !== '' || kind.version !== 'v1' || kind.kind !== 'Pod') {
    const gvk = `${String(kind.group || 'core')}/${String(kind.version)} ${String(kind.kind)}`;
    throw new BadReviewError(
      'not-a-pod',
      `AdmissionReview: request.kind is ${gvk}; the injector only handles core/v1 Pod`,
    );
  }
  if (!isObject(request.object)) {
    throw new BadReviewError('not-a-pod', 'AdmissionReview: request.object is missing or not a Pod object');
  }
  return {
    apiVersion,
    request: {
      uid: request.uid,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      operation: typeof request.operation === 'string' ? request.operation : '',
      namespace: typeof request.namespace === 'string' && request.namespace !== '' ? request.namespace : undefined,
      name: typeof request.name === 'string' ? request.name : undefined,
      dryRun: request.dryRun === true,
      object: request.object as PodLike,
    },
  };
}

export function toAdmissionReview(
  apiVersion: string,
  uid: string,
  out: { patch?: PatchOperation[]; warnings?: string[]; auditAnnotations?: Record<string, string> },
): AdmissionReview {
  const response: AdmissionResponse = { uid, allowed: true };
  if (out.patch && out.patch.length > 0) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(out.patch)).toString('base64');
  }
  if (out.warnings && out.warnings.length > 0) response.warnings = out.warnings.map(toWarning);
  if (out.auditAnnotations) response.auditAnnotations = out.auditAnnotations;
  return { apiVersion, kind: 'AdmissionReview', response };
}

/** The API server wants one line per warning (it becomes an HTTP Warning header) and may truncate past 256 characters. */
function toWarning(text: string): string {
  const line = text
    .replace(/\s+/g, ' ')
    .replace(/[^\x20-\x7e]/g, '?')
    .trim();
  return line.length <= 256 ? line : `${line.slice(0, 253)}...`;
}
