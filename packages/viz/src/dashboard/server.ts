// `minimesh viz dashboard`: a web page on localhost (fastify) over the same viz API as the CLI. The page
// asks /api/* (JSON) and /api/tap (server-sent events); every error is a JSON {error} with the same
// one-line message the CLI prints.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { getEdges, getHistory, getNamespaces, getStat, streamTap, type VizDeps } from '../api.js';
import { VizError } from '../errors.js';
import { QueryError } from '../promql.js';
import { PrometheusError } from '../prometheus.js';
import { parseResource, ResourceError, type Resource } from '../resource.js';
import { TapFilterError } from '../tap-request.js';
import { dashboardHtml } from './page-html.js';

export interface DashboardOptions {
  deps: VizDeps;
  /** The tap service's URL (the minimesh-viz ConfigMap). */
  tapUrl: () => Promise<string>;
  /** Shown in the page header. */
  context: string;
  defaultNamespace: string;
  /** Log requests (fastify's logger); off by default. */
  logger?: boolean;
}

/** The built browser modules: next to this file once compiled, in dist/ when run from the sources (tests). */
function assetPath(name: string): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, name), join(here, '..', '..', 'dist', 'dashboard', name)];
  const found = candidates.find((p) => existsSync(p) && p.endsWith('.js'));
  if (!found)
    throw new Error(`dashboard asset ${name} is missing (looked in ${candidates.join(', ')}): run npm run build`);
  return found;
}

/** An error as the HTTP status and the one line the CLI would print. */
export function toHttpError(err: unknown): { status: number; message: string } {
  const message = (err as Error).message ?? String(err);
  if (err instanceof VizError) {
    const status =
      err.code === 'MINIMESH_VIZ_NOT_FOUND' || err.code === 'MINIMESH_VIZ_NOT_MESHED'
        ? 404
        : err.code === 'MINIMESH_VIZ_BAD_INPUT'
          ? 400
          : err.code === 'MINIMESH_VIZ_NOT_INSTALLED'
            ? 503
            : 502;
    return { status, message };
  }
  if (err instanceof ResourceError || err instanceof QueryError || err instanceof TapFilterError)
    return { status: 400, message };
  if (err instanceof PrometheusError) return { status: 502, message };
  return { status: 500, message };
}

function resourceOf(q: Record<string, string | undefined>): Resource {
  const r = parseResource(q.kind ?? 'deploy', q.name || undefined);
  return { ...r, namespace: q.namespace ?? '' };
}

export async function createDashboard(opts: DashboardOptions): Promise<FastifyInstance> {
  const app = Fastify({ logger: opts.logger ?? false });
  const assets: Record<string, string> = { '/assets/page/app.js': 'page/app.js', '/assets/svg.js': 'svg.js' };
  const html = dashboardHtml({ context: opts.context, defaultNamespace: opts.defaultNamespace });
  app.get('/', async (_req, reply) => reply.type('text/html; charset=utf-8').send(html));
  for (const [url, file] of Object.entries(assets)) {
    app.get(url, async (_req, reply) =>
      reply.type('text/javascript; charset=utf-8').send(readFileSync(assetPath(file), 'utf8')),
    );
  }
  const fail = (reply: FastifyReply, err: unknown) => {
    const { status, message } = toHttpError(err);
    return reply.code(status).send({ error: message });
  };
  type Q = { Querystring: Record<string, string | undefined> };
  app.get('/api/namespaces', async (_req, reply) => {
    try {
      return { namespaces: await getNamespaces(opts.deps) };
    } catch (err) {
      return fail(reply, err);
    }
  });
  app.get<Q>('/api/stat', async (req, reply) => {
    try {
      const q = req.query;
      const r = resourceOf(q);
      return {
        rows: await getStat(opts.deps, { resource: r, namespace: q.namespace ?? '', window: q.window ?? '1m' }),
      };
    } catch (err) {
      return fail(reply, err);
    }
  });
  app.get<Q>('/api/edges', async (req, reply) => {
    try {
      const r = resourceOf(req.query);
      return { edges: await getEdges(opts.deps, { kind: r.kind, namespace: req.query.namespace ?? '' }) };
    } catch (err) {
      return fail(reply, err);
    }
  });
  app.get<Q>('/api/history', async (req, reply) => {
    try {
      const q = req.query;
      const minutes = Number(q.minutes ?? '15');
      return {
        history: await getHistory(opts.deps, {
          resource: resourceOf(q),
          namespace: q.namespace ?? '',
          minutes,
          stepSeconds: Math.max(5, Math.ceil((minutes * 60) / 120)),
        }),
      };
    } catch (err) {
      return fail(reply, err);
    }
  });
  // Live requests as server-sent events: record, warning, error (one line, then the stream ends), end.
  app.get<Q>('/api/tap', async (req, reply) => {
    const q = req.query;
    let resource: Resource;
    let tapUrl: string;
    try {
      resource = resourceOf(q);
      if (resource.name === '') throw new ResourceError('tap needs one workload: kind and name');
      tapUrl = await opts.tapUrl();
    } catch (err) {
      return fail(reply, err);
    }
    const abort = new AbortController();
    reply.raw.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    const send = (event: string, data: unknown) => {
      if (!reply.raw.writableEnded) reply.raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    req.raw.on('close', () => abort.abort());
    reply.hijack();
    try {
      await streamTap(
        opts.deps.kube,
        tapUrl,
        {
          resource,
          namespace: resource.namespace,
          limit: Math.min(Number(q.limit ?? '1000'), 10_000),
          ...(q.path ? { path: q.path } : {}),
          ...(q.method ? { method: q.method } : {}),
        },
        {
          onRecord: (r) => send('record', r),
          onWarning: (m) => send('warning', { message: m }),
          onStart: (pods) => send('start', { pods }),
        },
        abort.signal,
      );
      send('end', {});
    } catch (err) {
      if (!abort.signal.aborted) send('error', { message: toHttpError(err).message });
    }
    reply.raw.end();
  });
  return app;
}
