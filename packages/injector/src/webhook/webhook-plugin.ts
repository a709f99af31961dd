// The admission webhook as a fastify plugin: POST an AdmissionReview, get one back with the same uid,
// always allowed, with the JSON patch when the pod is injected. The only module that knows HTTP status.
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { MeshConfig } from '@minimesh/config';
import type { Logger } from '@minimesh/runtime';
import { createPatch } from '../patch/create-patch.js';
import type { StringMap } from '../patch/types.js';
import { BadReviewError, parseAdmissionReview, toAdmissionReview } from './admission-review.js';
import type { AdmissionResult, WebhookMetrics } from './webhook-metrics.js';

export const WEBHOOK_BODY_LIMIT = 10 * 1024 * 1024;

export interface WebhookPluginOptions {
  /** The current mesh configuration. */
  config: () => MeshConfig;
  /** Annotations of a Namespace (cached by a watch); undefined when it does not exist. */
  namespaceAnnotations: (namespace: string) => Promise<StringMap | undefined> | StringMap | undefined;
  logger: Logger;
  metrics: WebhookMetrics;
}

const results = new WeakMap<FastifyRequest, AdmissionResult>();

export const webhookPlugin: FastifyPluginAsync<WebhookPluginOptions> = async (app, opts) => {
  const log = opts.logger;
  const { metrics } = opts;
  const count = (req: FastifyRequest, result: AdmissionResult, reason: string): void => {
    results.set(req, result);
    metrics.requests.inc({ result, reason });
  };

  // Every body is read as text and parsed here, so a malformed one gets our message and status.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch (err) {
      done(
        new BadReviewError('malformed-json', `request body is not valid JSON: ${(err as Error).message}`, {
          cause: err,
        }),
        undefined,
      );
    }
  });

  app.setErrorHandler((err: FastifyError | BadReviewError, req, reply) => {
    if (err instanceof BadReviewError) {
      count(req, 'rejected', err.reason);
      log.warn({ reason: err.reason, err: err.message }, 'bad admission request');
      return reply.code(400).send({ code: err.code, message: err.message });
    }
    if ((err as FastifyError).code === 'FST_ERR_CTP_BODY_TOO_LARGE' || (err as FastifyError).statusCode === 413) {
      count(req, 'rejected', 'body-too-large');
      log.warn({ limit: WEBHOOK_BODY_LIMIT }, 'admission request body too large');
      return reply.code(413).send({
        code: 'MINIMESH_INJECTOR_BODY_TOO_LARGE',
        message: `request body is over the ${WEBHOOK_BODY_LIMIT / 1024 / 1024} MiB limit`,
      });
    }
    const status = (err as FastifyError).statusCode ?? 500;
    count(req, 'rejected', status >= 500 ? 'internal' : 'bad-request');
    if (status >= 500) log.error({ err }, 'admission request failed');
    return reply
      .code(status)
      .send({ code: (err as FastifyError).code ?? 'MINIMESH_INJECTOR_INTERNAL', message: err.message });
  });

  app.addHook('onResponse', async (req, reply) => {
    metrics.duration.observe({ result: results.get(req) ?? 'rejected' }, reply.elapsedTime / 1000);
  });

  const handler = async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    if (req.body === undefined || req.body === null)
      throw new BadReviewError('bad-review', 'request body is empty: expected an AdmissionReview');
    const { apiVersion, request } = parseAdmissionReview(req.body);
    const reqLog = log.child({
      uid: request.uid,
      namespace: request.namespace,
      pod: request.name ?? request.object.metadata?.generateName,
    });
    if (request.operation !== 'CREATE') {
      count(req, 'skipped', 'not-create');
      return reply.send(
        toAdmissionReview(apiVersion, request.uid, {
          auditAnnotations: { injected: 'false', 'skip-reason': 'not-create' },
        }),
      );
    }
    try {
      const namespaceAnnotations = request.namespace
        ? ((await opts.namespaceAnnotations(request.namespace)) ?? {})
        : {};
      const result = createPatch(request.object, {
        config: opts.config(),
        namespace: request.namespace,
        namespaceAnnotations,
      });
      if (result.skipped) {
        count(req, 'skipped', result.skipped.reason);
        reqLog.debug({ reason: result.skipped.reason }, `not injected: ${result.skipped.message}`);
        return reply.send(
          toAdmissionReview(apiVersion, request.uid, {
            warnings: result.skipped.reason === 'invalid-inject-annotation' ? [result.skipped.message] : [],
            auditAnnotations: { injected: 'false', 'skip-reason': result.skipped.reason },
          }),
        );
      }
      count(req, 'injected', 'none');
      if (result.warnings.length > 0) reqLog.info({ warnings: result.warnings }, 'injected with warnings');
      else reqLog.debug('injected');
      return reply.send(
        toAdmissionReview(apiVersion, request.uid, {
          patch: result.patch,
          warnings: result.warnings,
          auditAnnotations: { injected: 'true' },
        }),
      );
    } catch (err) {
      // A bug of ours (or a pod shape we did not expect) must never block pod creation.
      count(req, 'error', 'exception');
      reqLog.error({ err }, 'building the patch failed; admitting the pod without the mesh');
      return reply.send(
        toAdmissionReview(apiVersion, request.uid, {
          warnings: [
            `minimesh injector: the pod was admitted without the mesh because building the patch failed: ${(err as Error).message}`,
          ],
          auditAnnotations: { injected: 'false', 'skip-reason': 'error' },
        }),
      );
    }
  };

  app.post('/', { bodyLimit: WEBHOOK_BODY_LIMIT }, handler);
  app.post('/*', { bodyLimit: WEBHOOK_BODY_LIMIT }, handler);
};
