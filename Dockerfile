# syntax=docker/dockerfile:1.7
# minimesh images: one build stage for the whole monorepo, one small final stage per program.
#   docker build --target proxy-init  -t ghcr.io/minimesh/proxy-init:0.1.0  .
#   docker build --target proxy       -t ghcr.io/minimesh/proxy:0.1.0       .
#   docker build --target destination -t ghcr.io/minimesh/destination:0.1.0 .
#   docker build --target identity    -t ghcr.io/minimesh/identity:0.1.0    .
#   docker build --target injector    -t ghcr.io/minimesh/injector:0.1.0    .
# scripts/k3d.sh builds all of them. Final stages hold Node, the built JavaScript and production
# node_modules only: no compiler, no npm cache, no sources.

# Pinned base (Node 20 on Alpine 3.21). Override with --build-arg NODE_IMAGE=node@sha256:... to pin a digest.
ARG NODE_IMAGE=node:20-alpine3.21

# ---- build: npm ci, turbo build, the SO_ORIGINAL_DST addon, then drop dev dependencies ----
FROM ${NODE_IMAGE} AS build
RUN apk add --no-cache python3 make g++
WORKDIR /src
COPY . .
# npm 11 blocks dependency install scripts; nothing here needs one (the addon is built explicitly below).
RUN npm ci --no-audit --no-fund --loglevel=error
RUN npx turbo run build --filter='./packages/*'
# The image ships Node headers in /usr/local/include/node: build against them, offline.
RUN cd packages/proxy/native && node /src/node_modules/node-gyp/bin/node-gyp.js rebuild --nodedir=/usr/local --loglevel=warn
RUN npm prune --omit=dev --no-audit --no-fund --loglevel=error \
 && rm -rf packages/*/src packages/*/test packages/proxy/native/build/Release/obj.target packages/local-cluster/go

# ---- common runtime: Node + production node_modules + every package's dist ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/packages ./packages
# Nobody logs in: the node image's own user and npm/yarn are not needed at run time.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/bin/npm /usr/local/bin/npx /opt/yarn* /usr/local/bin/yarn /usr/local/bin/yarnpkg

# ---- proxy-init: iptables with both backends (nft and legacy) ----
# Non-root with file capabilities, as Linkerd's image: the xtables binaries carry cap_net_admin and
# cap_net_raw, so uid 65534 can write rules when the pod grants NET_ADMIN/NET_RAW. (The chart and
# the injector currently run the init container as root; both work.)
FROM runtime AS proxy-init
RUN apk add --no-cache iptables iptables-legacy \
 && apk add --no-cache --virtual .caps libcap-utils \
 && for b in /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /sbin/xtables-nft-multi /sbin/xtables-legacy-multi; do \
      [ -e "$b" ] && setcap cap_net_admin,cap_net_raw+eip "$(readlink -f "$b")" || true; done \
 && apk del .caps
USER 65534:65534
ENTRYPOINT ["node", "/app/packages/proxy-init/dist/main.js"]

# ---- proxy: uid 2102, with the native addon ----
FROM runtime AS proxy
ENV MINIMESH_ORIGINAL_DST_ADDON=/app/packages/proxy/native/build/Release/original_dst.node
USER 2102:2102
EXPOSE 4143 4191 4190
ENTRYPOINT ["node", "/app/packages/proxy/dist/main.js"]

FROM runtime AS destination
USER 2103:2103
EXPOSE 8086 9996
ENTRYPOINT ["node", "/app/packages/destination/dist/main.js"]

FROM runtime AS identity
USER 2103:2103
EXPOSE 8080 9990
ENTRYPOINT ["node", "/app/packages/identity/dist/main.js"]

FROM runtime AS injector
USER 2103:2103
EXPOSE 8443 9995
ENTRYPOINT ["node", "/app/packages/injector/dist/main.js"]

# ---- the CLI (minimesh inject, certs create, ...) ----
FROM runtime AS cli
USER 65534:65534
ENTRYPOINT ["node", "/app/packages/cli/dist/main.js"]
