{{/*
Shared pieces of the control-plane objects. The proxy and proxy-init containers here must stay equal to
what the injector (packages/injector/src/patch) adds to an application pod; e2e/chart/injector-parity.test.ts
renders both and fails when they drift.
*/}}

{{- define "minimesh.version" -}}{{ .Chart.AppVersion }}{{- end -}}

{{- define "minimesh.trustDomain" -}}{{ .Values.identityTrustDomain | default .Values.clusterDomain }}{{- end -}}

{{/* The identity of a control-plane service account: <sa>.<ns>.serviceaccount.identity.<ns>.<trust domain>. */}}
{{- define "minimesh.identityName" -}}
{{- $ := index . 0 -}}{{- $sa := index . 1 -}}
{{- printf "%s.%s.serviceaccount.identity.%s.%s" $sa $.Release.Namespace $.Release.Namespace (include "minimesh.trustDomain" $) -}}
{{- end -}}

{{/* viz: the tap service's identity, the only client of the proxies' tap servers; empty without viz. */}}
{{- define "minimesh.tapSvcName" -}}{{ if dig "viz" "enabled" false .Values.AsMap }}{{ include "minimesh.identityName" (list . "minimesh-tap") }}{{ end }}{{- end -}}

{{- define "minimesh.identityAddr" -}}{{ printf "minimesh-identity.%s.svc.%s:8080" .Release.Namespace .Values.clusterDomain }}{{- end -}}
{{- define "minimesh.destinationAddr" -}}{{ printf "minimesh-dst.%s.svc.%s:8086" .Release.Namespace .Values.clusterDomain }}{{- end -}}
{{- define "minimesh.policyAddr" -}}{{ printf "minimesh-policy.%s.svc.%s:8090" .Release.Namespace .Values.clusterDomain }}{{- end -}}

{{/*
The cni values (JSON) over values.yaml's defaults, repeated here: a release made before CNI mode has no
cni at all, and helm upgrade --reuse-values gives the old values in place of values.yaml
(e2e/chart/upgrade-values.test.ts renders the chart so).
*/}}
{{- define "minimesh.cniValues" -}}
{{- $d := dict "enabled" false "image" (dict "name" "ghcr.io/minimesh/cni" "version" "" "pullPolicy" "IfNotPresent") "binDir" "/opt/cni/bin" "confDir" "/etc/cni/net.d" "stateDir" "/var/run/minimesh-cni" "logLevel" "info" "resync" "10s" "validator" (dict "connectAddr" "192.0.2.2:20001" "uid" 65534 "timeout" "10s") "resources" (dict) -}}
{{- mustMergeOverwrite $d (deepCopy (.Values.cni | default dict)) | toJson -}}
{{- end -}}

{{- define "minimesh.proxyImage" -}}{{ printf "%s:%s" .Values.proxy.image.name (.Values.proxy.image.version | default .Chart.AppVersion) }}{{- end -}}
{{- define "minimesh.proxyInitImage" -}}{{ printf "%s:%s" .Values.proxyInit.image.name (.Values.proxyInit.image.version | default .Chart.AppVersion) }}{{- end -}}
{{- define "minimesh.controllerImage" -}}
{{- $ := index . 0 -}}{{- $program := index . 1 -}}
{{- printf "%s/%s:%s" $.Values.controllerImage.registry $program ($.Values.controllerImage.version | default $.Chart.AppVersion) -}}
{{- end -}}

{{/* Fails the render with a message that says which value to set and how to make the certificates. */}}
{{- define "minimesh.validate" -}}
{{- $how := "Make the certificates with `minimesh certs create` (it writes ca.crt, ca.key, issuer.crt and issuer.key; or use step as in docs/chart.md), then pass them with --set-file identityTrustAnchorsPEM=ca.crt --set-file identity.issuer.tls.crtPEM=issuer.crt --set-file identity.issuer.tls.keyPEM=issuer.key" -}}
{{- if not (.Values.identityTrustAnchorsPEM | trim) -}}
{{- fail (printf "\n\nminimesh: identityTrustAnchorsPEM is not set: the proxies need the trust anchor (ca.crt).\n%s\n" $how) -}}
{{- end -}}
{{- if not (contains "BEGIN CERTIFICATE" .Values.identityTrustAnchorsPEM) -}}
{{- fail "\n\nminimesh: identityTrustAnchorsPEM is not a PEM certificate (expected -----BEGIN CERTIFICATE-----): pass the file with --set-file identityTrustAnchorsPEM=ca.crt, not --set\n" -}}
{{- end -}}
{{- if eq .Values.identity.issuer.scheme "minimesh.io/tls" -}}
{{- if not (.Values.identity.issuer.tls.crtPEM | trim) -}}
{{- fail (printf "\n\nminimesh: identity.issuer.tls.crtPEM is not set: identity needs the issuer certificate (issuer.crt).\n%s\n" $how) -}}
{{- end -}}
{{- if not (.Values.identity.issuer.tls.keyPEM | trim) -}}
{{- fail (printf "\n\nminimesh: identity.issuer.tls.keyPEM is not set: identity needs the issuer private key (issuer.key).\n%s\n" $how) -}}
{{- end -}}
{{- else if eq .Values.identity.issuer.scheme "kubernetes.io/tls" -}}
{{- if or .Values.identity.issuer.tls.crtPEM .Values.identity.issuer.tls.keyPEM -}}
{{- fail "\n\nminimesh: identity.issuer.scheme is kubernetes.io/tls (an external Secret minimesh-identity-issuer): leave identity.issuer.tls.crtPEM and keyPEM empty\n" -}}
{{- end -}}
{{- else -}}
{{- fail (printf "\n\nminimesh: identity.issuer.scheme is %q: expected minimesh.io/tls or kubernetes.io/tls\n" .Values.identity.issuer.scheme) -}}
{{- end -}}
{{- if not (has .Values.proxyInit.iptablesMode (list "nft" "legacy")) -}}
{{- fail (printf "\n\nminimesh: proxyInit.iptablesMode is %q: expected nft or legacy\n" .Values.proxyInit.iptablesMode) -}}
{{- end -}}
{{- $tls := list .Values.proxyInjector.crtPEM .Values.proxyInjector.keyPEM .Values.proxyInjector.caBundle | compact -}}
{{- if and (gt (len $tls) 0) (lt (len $tls) 3) -}}
{{- fail "\n\nminimesh: set all three of proxyInjector.crtPEM, proxyInjector.keyPEM and proxyInjector.caBundle, or none (the chart then generates them)\n" -}}
{{- end -}}
{{- end -}}

{{- define "minimesh.labels" -}}
app.kubernetes.io/name: minimesh
app.kubernetes.io/part-of: minimesh
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
minimesh.io/control-plane-ns: {{ .Release.Namespace }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels of a component's objects and pods; argument: (list $ "destination"). */}}
{{- define "minimesh.componentLabels" -}}
{{- $ := index . 0 -}}{{- $c := index . 1 -}}
{{ include "minimesh.labels" $ }}
app.kubernetes.io/component: {{ $c }}
minimesh.io/control-plane-component: {{ $c }}
{{- end -}}

{{- define "minimesh.selectorLabels" -}}
{{- $ := index . 0 -}}{{- $c := index . 1 -}}
minimesh.io/control-plane-component: {{ $c }}
minimesh.io/control-plane-ns: {{ $.Release.Namespace }}
{{- end -}}

{{/* Pod metadata of a control-plane component. */}}
{{- define "minimesh.podMetadata" -}}
{{- $ := index . 0 -}}{{- $c := index . 1 -}}
metadata:
  annotations:
    minimesh.io/created-by: {{ printf "minimesh/helm %s" $.Chart.Version }}
    minimesh.io/proxy-version: {{ $.Values.proxy.image.version | default $.Chart.AppVersion | quote }}
    minimesh.io/trust-root-sha256: {{ $.Values.identityTrustAnchorsPEM | sha256sum }}
    minimesh.io/inject: disabled
    {{- /* The control plane stays reachable whatever the cluster default (as Linkerd's). */}}
    config.minimesh.io/default-inbound-policy: all-unauthenticated
    checksum/config: {{ include (print $.Template.BasePath "/config.yaml") $ | sha256sum }}
    {{- with $.Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  labels:
    {{- include "minimesh.componentLabels" (list $ $c) | nindent 4 }}
    minimesh.io/is-control-plane: "true"
    minimesh.io/workload-ns: {{ $.Release.Namespace }}
    minimesh.io/proxy-deployment: minimesh-{{ $c }}
    {{- with $.Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* Scheduling pieces of a control-plane pod spec. */}}
{{- define "minimesh.podScheduling" -}}
{{- $ := index . 0 -}}{{- $c := index . 1 -}}
{{- with $.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $.Values.enablePodAntiAffinity }}
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchLabels:
            {{- include "minimesh.selectorLabels" (list $ $c) | nindent 12 }}
        topologyKey: kubernetes.io/hostname
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          labelSelector:
            matchLabels:
              {{- include "minimesh.selectorLabels" (list $ $c) | nindent 14 }}
          topologyKey: topology.kubernetes.io/zone
{{- end }}
{{- end -}}

{{/* The proxy-init arguments, in the order Linkerd's proxy-init takes them in the Linkerd tutorial (same as the injector's toProxyInitArgs). */}}
{{- define "minimesh.proxyInitArgs" -}}
{{- $ := . -}}
{{- $in := list (toString .Values.proxy.ports.control) (toString .Values.proxy.ports.admin) -}}
{{- range (splitList "," (toString .Values.proxyInit.ignoreInboundPorts)) }}{{ if trim . }}{{ $in = append $in (trim .) }}{{ end }}{{ end -}}
{{- $out := list -}}
{{- range (splitList "," (printf "%s,%s" (toString .Values.proxyInit.kubeAPIServerPorts) (toString .Values.proxyInit.ignoreOutboundPorts))) }}{{ if trim . }}{{ $out = append $out (trim .) }}{{ end }}{{ end -}}
- --ipv6={{ .Values.proxyInit.ipv6 }}
- --incoming-proxy-port
- {{ .Values.proxy.ports.inbound | quote }}
- --outgoing-proxy-port
- {{ .Values.proxy.ports.outbound | quote }}
- --proxy-uid
- {{ .Values.proxy.uid | quote }}
- --inbound-ports-to-ignore
- {{ $in | uniq | join "," | quote }}
{{- if $out }}
- --outbound-ports-to-ignore
- {{ $out | uniq | join "," | quote }}
{{- end }}
{{- if .Values.proxyInit.skipSubnets }}
- --subnets-to-ignore
- {{ .Values.proxyInit.skipSubnets | quote }}
{{- end }}
- --iptables-mode
- {{ .Values.proxyInit.iptablesMode }}
{{- if gt (int .Values.proxyInit.closeWaitTimeoutSecs) 0 }}
- --timeout-close-wait-secs
- {{ .Values.proxyInit.closeWaitTimeoutSecs | quote }}
{{- end }}
{{- end -}}

{{/* The minimesh-init container. */}}
{{- define "minimesh.proxyInitContainer" -}}
- name: minimesh-init
  image: {{ include "minimesh.proxyInitImage" . }}
  imagePullPolicy: {{ .Values.proxyInit.image.pullPolicy }}
  args:
    {{- include "minimesh.proxyInitArgs" . | nindent 4 }}
  resources:
    {{- with include "minimesh.resources" .Values.proxyInit.resources }}
    {{- . | nindent 4 }}
    {{- else }}
    requests:
      cpu: 10m
      memory: 10Mi
    limits:
      memory: 50Mi
    {{- end }}
  securityContext:
    allowPrivilegeEscalation: false
    capabilities:
      add: [NET_ADMIN, NET_RAW]
      drop: [ALL]
    privileged: false
    readOnlyRootFilesystem: true
    runAsNonRoot: false
    runAsUser: 0
    seccompProfile:
      type: RuntimeDefault
  terminationMessagePolicy: FallbackToLogsOnError
  volumeMounts:
    - name: {{ .Values.proxyInit.xtMountPath.name }}
      mountPath: {{ .Values.proxyInit.xtMountPath.mountPath }}
{{- end -}}

{{/*
The minimesh-proxy container of a control-plane pod; argument: (dict "root" $ "component" "destination"
"inboundPorts" "8086,9996" "identityAddr" "..." "native" true "startupProbe" true).
*/}}
{{- define "minimesh.proxyContainer" -}}
{{- $ := .root -}}
{{- $v := $.Values -}}
{{- $ns := $.Release.Namespace -}}
{{- $td := include "minimesh.trustDomain" $ -}}
- name: minimesh-proxy
  image: {{ include "minimesh.proxyImage" $ }}
  imagePullPolicy: {{ $v.proxy.image.pullPolicy }}
  env:
    - name: _pod_name
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    - name: _pod_ns
      valueFrom:
        fieldRef:
          fieldPath: metadata.namespace
    - name: _pod_nodeName
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: _pod_sa
      valueFrom:
        fieldRef:
          fieldPath: spec.serviceAccountName
    - name: MINIMESH_PROXY_LOG
      value: {{ $v.proxy.logLevel | quote }}
    - name: MINIMESH_PROXY_LOG_FORMAT
      value: {{ $v.logFormat | default $v.proxy.logFormat | quote }}
    {{- /* IPv6 on: [::] takes both families; outbound listens on both loopbacks (REDIRECT sends IPv6 to ::1). */}}
    {{- $any := ternary "[::]" "0.0.0.0" $v.proxyInit.ipv6 }}
    - name: MINIMESH_PROXY_INBOUND_LISTEN_ADDR
      value: {{ printf "%s:%v" $any $v.proxy.ports.inbound | quote }}
    - name: MINIMESH_PROXY_INBOUND_IPS
      valueFrom:
        fieldRef:
          fieldPath: status.podIPs
    - name: MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR
      value: {{ ternary (printf "127.0.0.1:%v,[::1]:%v" $v.proxy.ports.outbound $v.proxy.ports.outbound) (printf "127.0.0.1:%v" $v.proxy.ports.outbound) $v.proxyInit.ipv6 | quote }}
    - name: MINIMESH_PROXY_ADMIN_LISTEN_ADDR
      value: {{ printf "%s:%v" $any $v.proxy.ports.admin | quote }}
    - name: MINIMESH_PROXY_CONTROL_LISTEN_ADDR
      value: {{ printf "%s:%v" $any $v.proxy.ports.control | quote }}
    - name: MINIMESH_PROXY_DESTINATION_SVC_ADDR
      value: {{ include "minimesh.destinationAddr" $ | quote }}
    - name: MINIMESH_PROXY_DESTINATION_SVC_NAME
      value: {{ include "minimesh.identityName" (list $ "minimesh-destination") | quote }}
    - name: MINIMESH_PROXY_DESTINATION_CONTEXT
      value: '{"ns":"$(_pod_ns)","nodeName":"$(_pod_nodeName)","pod":"$(_pod_name)"}'
    - name: MINIMESH_PROXY_IDENTITY_SVC_ADDR
      value: {{ .identityAddr | default (include "minimesh.identityAddr" $) | quote }}
    - name: MINIMESH_PROXY_IDENTITY_SVC_NAME
      value: {{ include "minimesh.identityName" (list $ "minimesh-identity") | quote }}
    - name: MINIMESH_PROXY_IDENTITY_LOCAL_NAME
      value: {{ printf "$(_pod_sa).$(_pod_ns).serviceaccount.identity.%s.%s" $ns $td | quote }}
    - name: MINIMESH_PROXY_IDENTITY_TOKEN_FILE
      value: /var/run/secrets/tokens/minimesh-identity-token
    - name: MINIMESH_PROXY_IDENTITY_DIR
      value: /var/run/minimesh/identity
    - name: MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS
      value: {{ $v.identityTrustAnchorsPEM | quote }}
    - name: MINIMESH_PROXY_POLICY_SVC_ADDR
      value: {{ include "minimesh.policyAddr" $ | quote }}
    - name: MINIMESH_PROXY_POLICY_SVC_NAME
      value: {{ include "minimesh.identityName" (list $ "minimesh-destination") | quote }}
    - name: MINIMESH_PROXY_POLICY_WORKLOAD
      value: '{"ns":"$(_pod_ns)","pod":"$(_pod_name)"}'
    - name: MINIMESH_PROXY_INBOUND_DEFAULT_POLICY
      value: all-unauthenticated
    - name: MINIMESH_PROXY_POLICY_CLUSTER_NETWORKS
      value: {{ $v.clusterNetworks | quote }}
    - name: MINIMESH_PROXY_INBOUND_PORTS
      value: {{ .inboundPorts | quote }}
    - name: MINIMESH_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION
      value: {{ $v.proxy.opaquePorts | quote }}
    - name: MINIMESH_PROXY_OUTBOUND_CONNECT_TIMEOUT
      value: {{ $v.proxy.connectTimeout | quote }}
    - name: MINIMESH_PROXY_DETECT_TIMEOUT
      value: {{ $v.proxy.detectTimeout | quote }}
    - name: MINIMESH_PROXY_SHUTDOWN_ENDPOINT_ENABLED
      value: {{ $v.proxy.enableShutdownEndpoint | toString | quote }}
    {{- with (include "minimesh.tapSvcName" $) }}
    - name: MINIMESH_PROXY_TAP_SVC_NAME
      value: {{ . | quote }}
    {{- end }}
  ports:
    - name: minimesh-proxy
      containerPort: {{ $v.proxy.ports.inbound }}
      protocol: TCP
    - name: minimesh-admin
      containerPort: {{ $v.proxy.ports.admin }}
      protocol: TCP
  {{- if .native }}
  restartPolicy: Always
  {{- if .startupProbe }}
  startupProbe:
    httpGet:
      path: /ready
      port: {{ $v.proxy.ports.admin }}
    periodSeconds: {{ $v.proxy.startupProbe.periodSeconds }}
    failureThreshold: {{ $v.proxy.startupProbe.failureThreshold }}
  {{- end }}
  {{- end }}
  livenessProbe:
    httpGet:
      path: /live
      port: {{ $v.proxy.ports.admin }}
    initialDelaySeconds: 10
    periodSeconds: 10
  readinessProbe:
    httpGet:
      path: /ready
      port: {{ $v.proxy.ports.admin }}
    initialDelaySeconds: {{ if .native }}0{{ else }}2{{ end }}
    periodSeconds: 10
  resources:
    {{- with include "minimesh.resources" $v.proxy.resources }}
    {{- . | nindent 4 }}
    {{- end }}
  securityContext:
    allowPrivilegeEscalation: false
    capabilities:
      drop: [ALL]
    readOnlyRootFilesystem: true
    runAsNonRoot: true
    runAsUser: {{ $v.proxy.uid }}
    {{- if ge (int $v.proxy.gid) 0 }}
    runAsGroup: {{ $v.proxy.gid }}
    {{- end }}
    seccompProfile:
      type: RuntimeDefault
  terminationMessagePolicy: FallbackToLogsOnError
  volumeMounts:
    - name: minimesh-identity-end-entity
      mountPath: /var/run/minimesh/identity
    - name: minimesh-identity-token
      mountPath: /var/run/secrets/tokens
      readOnly: true
{{- end -}}

{{/* The volumes the injector adds, for a control-plane pod. */}}
{{- define "minimesh.proxyVolumes" -}}
- name: {{ .Values.proxyInit.xtMountPath.name }}
  emptyDir: {}
- name: minimesh-identity-end-entity
  emptyDir:
    medium: Memory
- name: minimesh-identity-token
  projected:
    sources:
      - serviceAccountToken:
          audience: {{ .Values.identity.tokenAudience }}
          expirationSeconds: 86400
          path: minimesh-identity-token
{{- end -}}

{{/* A control-plane container's security context. */}}
{{- define "minimesh.controllerSecurityContext" -}}
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: {{ .Values.controllerUID }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The webhook's namespaceSelector, with the control-plane namespace always excluded. */}}
{{- define "minimesh.webhookNamespaceSelector" -}}
{{- $sel := deepCopy (.Values.proxyInjector.namespaceSelector | default dict) -}}
{{- $exprs := list -}}
{{- $found := false -}}
{{- range (get $sel "matchExpressions" | default list) -}}
{{- if and (eq .key "kubernetes.io/metadata.name") (eq .operator "NotIn") -}}
{{- $found = true -}}
{{- $exprs = append $exprs (dict "key" .key "operator" .operator "values" (append .values $.Release.Namespace | uniq)) -}}
{{- else -}}
{{- $exprs = append $exprs . -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- $exprs = append $exprs (dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" (list "kube-system" $.Release.Namespace)) -}}
{{- end -}}
{{- $_ := set $sel "matchExpressions" $exprs -}}
{{- toYaml $sel -}}
{{- end -}}

{{/*
A container's resources from either shape: Linkerd's (cpu.request, cpu.limit, memory.request,
memory.limit, ephemeral-storage.request/limit, as in Linkerd's values-ha) or Kubernetes' (requests/limits);
both may be mixed, Linkerd's keys win. Renders the map without the `resources:` key, or nothing.
Argument: the value (e.g. .Values.destinationResources).
*/}}
{{- define "minimesh.resources" -}}
{{- $r := . | default dict -}}
{{- $requests := dict -}}{{- $limits := dict -}}
{{- range $k, $v := ($r.requests | default dict) }}{{ $_ := set $requests $k (toString $v) }}{{ end -}}
{{- range $k, $v := ($r.limits | default dict) }}{{ $_ := set $limits $k (toString $v) }}{{ end -}}
{{- range $name := list "cpu" "memory" "ephemeral-storage" -}}
{{- $q := get $r $name -}}
{{- if kindIs "map" $q -}}
{{- if and (hasKey $q "request") (toString $q.request) }}{{ $_ := set $requests $name (toString $q.request) }}{{ end -}}
{{- if and (hasKey $q "limit") (toString $q.limit) }}{{ $_ := set $limits $name (toString $q.limit) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- $out := dict -}}
{{- if $requests }}{{ $_ := set $out "requests" $requests }}{{ end -}}
{{- if $limits }}{{ $_ := set $out "limits" $limits }}{{ end -}}
{{- if $out }}{{ toYaml $out }}{{ end -}}
{{- end -}}

{{/*
The CRDs this control plane reads, each with the version it reads (the minimesh-crds chart installs
them). Keep in step with packages/policy/src/resources/kinds.ts and packages/destination.
*/}}
{{- define "minimesh.requiredCRDs" -}}
servers.policy.minimesh.io: v1beta3
authorizationpolicies.policy.minimesh.io: v1alpha1
meshtlsauthentications.policy.minimesh.io: v1alpha1
networkauthentications.policy.minimesh.io: v1alpha1
httproutes.policy.minimesh.io: v1beta3
httplocalratelimitpolicies.policy.minimesh.io: v1alpha1
egressnetworks.policy.minimesh.io: v1alpha1
externalworkloads.workload.minimesh.io: v1beta1
{{- end -}}

{{/* See templates/crds-check.yaml. */}}
{{- define "minimesh.requireCRDs" -}}
{{- if lookup "v1" "Namespace" "" "kube-system" -}}
{{- $install := printf "helm upgrade --install minimesh-crds charts/minimesh-crds -n %s" .Release.Namespace -}}
{{- $missing := list -}}{{- $old := list -}}{{- $owned := list -}}
{{- range $name, $version := (include "minimesh.requiredCRDs" . | fromYaml) -}}
{{- $crd := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" $name -}}
{{- if not $crd -}}
{{- $missing = append $missing $name -}}
{{- else -}}
{{- $served := false -}}
{{- range (dig "spec" "versions" list $crd) -}}{{- if and (eq .name $version) .served -}}{{- $served = true -}}{{- end -}}{{- end -}}
{{- if not $served -}}{{- $old = append $old (printf "%s (%s)" $name $version) -}}{{- end -}}
{{- $ann := dig "metadata" "annotations" dict $crd -}}
{{- if and (eq (get $ann "meta.helm.sh/release-name") $.Release.Name) (eq (get $ann "meta.helm.sh/release-namespace") $.Release.Namespace) (ne (get $ann "helm.sh/resource-policy") "keep") -}}
{{- $owned = append $owned $name -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $owned -}}
{{- fail (printf "\n\nminimesh: the CRDs %s belong to this release (%s), from the chart that had them inside. This chart no longer renders them, so this upgrade would make Helm delete them, and with them every object of their kinds. Hand them to the minimesh-crds chart first (docs/chart.md, \"Upgrading from a chart with the CRDs inside\"):\n  kubectl annotate crd %s --overwrite helm.sh/resource-policy=keep meta.helm.sh/release-name=minimesh-crds meta.helm.sh/release-namespace=%s\n  %s\nthen run this upgrade again.\n" (join ", " $owned) .Release.Name (join " " $owned) .Release.Namespace $install) -}}
{{- end -}}
{{- if $missing -}}
{{- fail (printf "\n\nminimesh: the minimesh CRDs are not installed (missing: %s). Install them first, with their own chart:\n  %s\nthen this chart (docs/chart.md).\n" (join ", " $missing) $install) -}}
{{- end -}}
{{- if $old -}}
{{- fail (printf "\n\nminimesh: the minimesh CRDs are older than this control plane: %s not served. Upgrade them first:\n  %s\n" (join ", " $old) $install) -}}
{{- end -}}
{{- end -}}
{{- end -}}
