# registry.k8s.io/coredns/coredns:v1.15.0, the cluster DNS of the local cluster: scripts/images.sh runs
# `go install github.com/coredns/coredns@v1.15.0` (CGO off, static) into its cache and builds this with
# that directory as the context. As upstream's image: non-root (65532) with cap_net_bind_service on the
# binary (set by scripts/images.sh before the build), so it can listen on port 53 when the pod grants it.
FROM scratch
COPY coredns /coredns
USER 65532:65532
EXPOSE 53 53/udp
ENTRYPOINT ["/coredns"]
