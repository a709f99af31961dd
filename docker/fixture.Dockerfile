# syntax=docker/dockerfile:1.7
# The e2e test apps (e2e/fixtures/<name>.mjs) as images minimesh.test/<name>, the same names the local
# cluster maps to the same files. The image keeps the repository's layout under /app so that a
# container `command: [node, e2e/scripts/grpc-client.mjs]` means the same thing here and there.
#   docker build -f docker/fixture.Dockerfile --build-arg FIXTURE=http-echo -t minimesh.test/http-echo:e2e .
ARG NODE_IMAGE=node:20-alpine3.21

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
# The gRPC fixtures' only dependencies, at the versions the repository's lock file has.
RUN npm install --no-audit --no-fund --loglevel=error --omit=dev @grpc/grpc-js@1.14.7 @grpc/proto-loader@0.8.1

FROM ${NODE_IMAGE}
ARG FIXTURE
ENV FIXTURE=${FIXTURE}
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY e2e/fixtures/ ./e2e/fixtures/
COPY e2e/scripts/grpc-client.mjs ./e2e/scripts/grpc-client.mjs
RUN test -f "e2e/fixtures/${FIXTURE}.mjs" || (echo "no fixture e2e/fixtures/${FIXTURE}.mjs" >&2; exit 1)
USER 65534:65534
ENTRYPOINT ["/bin/sh", "-c", "exec node /app/e2e/fixtures/${FIXTURE}.mjs \"$@\"", "--"]
