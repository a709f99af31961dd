{{/*
The labels of every minimesh CRD, and the annotation that keeps it when a release lets it go.
*/}}
{{- define "minimesh-crds.labels" -}}
app.kubernetes.io/name: minimesh
app.kubernetes.io/part-of: minimesh
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "minimesh-crds.annotations" -}}
helm.sh/resource-policy: keep
{{- end -}}
