# syntax=docker/dockerfile:1.7
# The e2e test apps (e2e/fixtures/<name>.mjs, plain Node, no dependencies) as images minimesh.test/<name>,
# the same names the local cluster maps to the same files:
#   docker build -f docker/fixture.Dockerfile --build-arg FIXTURE=http-echo -t minimesh.test/http-echo:e2e .
ARG NODE_IMAGE=node:20-alpine3.21
FROM ${NODE_IMAGE}
ARG FIXTURE
ENV FIXTURE=${FIXTURE}
WORKDIR /fixtures
COPY e2e/fixtures/ /fixtures/
RUN test -f "/fixtures/${FIXTURE}.mjs" || (echo "no fixture e2e/fixtures/${FIXTURE}.mjs" >&2; exit 1)
USER 65534:65534
ENTRYPOINT ["/bin/sh", "-c", "exec node /fixtures/${FIXTURE}.mjs \"$@\"", "--"]
