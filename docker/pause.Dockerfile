# registry.k8s.io/pause:3.10, the pod sandbox image kubelet 1.33 asks for, from Kubernetes' own source:
# scripts/images.sh compiles build/pause/linux/pause.c of the k8s.io/kubernetes module (gcc -Os -static,
# as upstream's Makefile) into its cache and builds this with that directory as the context. As upstream's
# image: the binary alone, uid 65535. Nothing is pulled.
FROM scratch
COPY pause /pause
USER 65535:65535
ENTRYPOINT ["/pause"]
