# prom/prometheus:v3.16.0, viz's metrics store: scripts/images.sh runs `go install
# github.com/prometheus/prometheus/cmd/prometheus@v0.316.0` (CGO off, static, stripped, version set with
# -ldflags) into its cache and builds this with that directory as the context. Laid out as upstream's
# image where the chart relies on it: /bin/prometheus as the entry point, non-root (nobody, 65534),
# /prometheus as the working directory. Without the web UI's assets (not in the Go module): the HTTP API
# is what `minimesh viz` reads.
FROM scratch
COPY prometheus /bin/prometheus
USER 65534:65534
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
