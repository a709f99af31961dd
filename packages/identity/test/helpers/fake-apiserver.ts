// A small stand-in that speaks the TokenReview API over HTTP on 127.0.0.1 (and GET /version), for unit
// tests of the client. The integration test uses the real API server from @minimesh/local-cluster.
import { createServer, type Server } from 'node:http';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface FakeToken {
  username: string;
  audiences: string[];
}

export interface FakeApiServer {
  url: string;
  /** token → who it belongs to and which audiences it was minted for. */
  tokens: Map<string, FakeToken>;
  /** Every TokenReview body received. */
  reviews: { token: string; audiences: string[] }[];
  /** Answer every request with this HTTP status and a Status body (e.g. 403), or undefined for normal service. */
  failWith: number | undefined;
  /** Writes a kubeconfig pointing here and returns its path. */
  kubeconfig(): Promise<string>;
  close(): Promise<void>;
}

export async function startFakeApiServer(): Promise<FakeApiServer> {
  const state: Pick<FakeApiServer, 'tokens' | 'reviews' | 'failWith'> = {
    tokens: new Map(),
    reviews: [],
    failWith: undefined,
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += String(d)));
    req.on('end', () => {
      const send = (status: number, obj: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(obj));
      };
      if (state.failWith !== undefined) {
        send(state.failWith, {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: state.failWith === 403 ? 'Forbidden' : 'InternalError',
          message: 'the fake API server was told to fail',
          code: state.failWith,
        });
        return;
      }
      if (req.method === 'GET' && req.url?.startsWith('/version')) {
        send(200, { major: '1', minor: '33', gitVersion: 'v1.33.0-fake' });
        return;
      }
      if (req.method === 'POST' && req.url?.startsWith('/apis/authentication.k8s.io/v1/tokenreviews')) {
        const review = JSON.parse(body) as { spec: { token: string; audiences?: string[] } };
        const wanted = review.spec.audiences ?? [];
        state.reviews.push({ token: review.spec.token, audiences: wanted });
        const known = state.tokens.get(review.spec.token);
        const common = known ? wanted.filter((a) => known.audiences.includes(a)) : [];
        const status = !known
          ? { authenticated: false, error: 'invalid bearer token' }
          : common.length === 0
            ? {
                authenticated: false,
                error: `token audiences ${JSON.stringify(known.audiences)} is invalid for the target audiences ${JSON.stringify(wanted)}`,
              }
            : {
                authenticated: true,
                audiences: common,
                user: { username: known.username, groups: ['system:serviceaccounts', 'system:authenticated'] },
              };
        send(201, {
          kind: 'TokenReview',
          apiVersion: 'authentication.k8s.io/v1',
          metadata: {},
          spec: review.spec,
          status,
        });
        return;
      }
      send(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return Object.assign(state, {
    url,
    async kubeconfig() {
      const dir = await mkdtemp(join(tmpdir(), 'mm-id-kubeconfig-'));
      const file = join(dir, 'kubeconfig');
      await writeFile(
        file,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters: [{ name: fake, cluster: { server: "' + url + '", insecure-skip-tls-verify: true } }]',
          'users: [{ name: identity, user: { token: identity-sa-token } }]',
          'contexts: [{ name: fake, context: { cluster: fake, user: identity } }]',
          'current-context: fake',
          '',
        ].join('\n'),
      );
      return file;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
