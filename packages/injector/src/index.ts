// @minimesh/injector: the pure patch (shared with `minimesh inject`), the webhook plugin and the
// namespace watch.
export { createPatch, trustRootSha256, CREATED_BY, type CreatePatchOptions } from './patch/create-patch.js';
export { decideInjection, isInjected, isControlPlanePod, type InjectDecision } from './patch/decide.js';
export {
  OVERRIDES,
  OVERRIDE_NAMES,
  parseOverride,
  resolveSettings,
  type OverrideName,
  type InjectSettings,
} from './patch/overrides.js';
export { toProxyInitArgs, buildProxyInitContainer } from './patch/proxy-init-container.js';
export {
  buildValidatorContainer,
  validatorConnectAddr,
  outboundIgnored,
  VALIDATOR_COMMAND,
} from './patch/validator-container.js';
export { buildProxyContainer, buildProxyEnv, CONTROL_PLANE_SERVICE_ACCOUNTS } from './patch/proxy-container.js';
export { buildVolumes, VOLUME_NAMES, IDENTITY_DIR, TOKEN_FILE } from './patch/volumes.js';
export { escapePointerToken, pointer, prefixPatch } from './patch/json-pointer.js';
export { uninjectPod } from './patch/uninject.js';
export type {
  PodLike,
  PodSpec,
  Container,
  Volume,
  PatchOperation,
  PatchResult,
  SkipReason,
  StringMap,
} from './patch/types.js';
export { InjectorError, type InjectorErrorCode } from './errors.js';
export { webhookPlugin, WEBHOOK_BODY_LIMIT, type WebhookPluginOptions } from './webhook/webhook-plugin.js';
export { createWebhookServer, type WebhookServer, type WebhookServerOptions } from './webhook/webhook-server.js';
export { createWebhookMetrics, type WebhookMetrics, type AdmissionResult } from './webhook/webhook-metrics.js';
export {
  parseAdmissionReview,
  toAdmissionReview,
  BadReviewError,
  type AdmissionRequest,
  type AdmissionReview,
  type AdmissionResponse,
} from './webhook/admission-review.js';
export { createNamespaceLookup, type NamespaceLookup, type NamespaceLookupOptions } from './k8s/namespace-lookup.js';
export { loadMeshConfig } from './load-config.js';
