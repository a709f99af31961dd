# registry.k8s.io/gateway-api/echo-advanced:v1.5.1, the echo application of the Gateway API conformance
# suite's mesh manifests (sigs.k8s.io/gateway-api/conformance v1.6.3, mesh/manifests.yaml), which is
# Istio's echo app: scripts/images.sh runs `go install istio.io/istio/pkg/test/echo/cmd/{server,client}`
# (CGO off, static, stripped) at a pinned pseudo-version into its cache, makes a self-signed key pair
# for the app's TLS port (its manifests pass --crt=/cert.crt --key=/cert.key), and builds this with that
# directory as the context. Laid out as the suite relies on: the server as the entry point, and the
# client on PATH (the suite runs `client <url>` in the pod with kubectl exec).
FROM scratch
COPY server /usr/local/bin/server
COPY client /usr/local/bin/client
COPY cert.crt /cert.crt
COPY cert.key /cert.key
ENV PATH=/usr/local/bin
ENTRYPOINT ["/usr/local/bin/server"]
