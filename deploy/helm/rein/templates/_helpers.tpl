{{/* The release's name for rein's objects: the release name when it says rein, else <release>-rein. */}}
{{- define "rein.fullname" -}}
{{- if contains "rein" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-rein" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; the component is added where there is one. */}}
{{- define "rein.labels" -}}
app.kubernetes.io/name: rein
app.kubernetes.io/part-of: rein
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Selector labels of one component's pods: (list $ "detector"). */}}
{{- define "rein.selector" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: rein
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "rein.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* rein.yaml: the streams section, read by the provision Job and every pod. */}}
{{- define "rein.reinYAML" -}}
streams:
{{ toYaml .Values.streams | indent 2 }}
{{- end -}}

{{/* The pod security context every rein pod runs with (restricted). */}}
{{- define "rein.podSecurity" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "rein.containerSecurity" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: [ALL]}
{{- end -}}

{{/* The stages that scale on lag (partitioned), with their durable and input stream. */}}
{{- define "rein.partitioned" -}}
detector: {durable: detector, stream: REIN_TURNS}
agentworker: {durable: agentworker, stream: REIN_TASKS}
{{- end -}}
