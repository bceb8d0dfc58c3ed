{{- define "gpuguard.name" -}}gpuguard{{- end -}}

{{- define "gpuguard.fullname" -}}
{{- if contains "gpuguard" .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else -}}{{ printf "%s-gpuguard" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "gpuguard.labels" -}}
app.kubernetes.io/name: gpuguard
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "gpuguard.selectorLabels" -}}
app.kubernetes.io/name: gpuguard
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpuguard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "gpuguard.fullname" .) .Values.serviceAccount.name }}
{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{- define "gpuguard.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "gpuguard.fullname" .)) .Values.certificates.secretName -}}
{{- end -}}

{{- define "gpuguard.serviceHost" -}}
{{ include "gpuguard.fullname" . }}.{{ .Release.Namespace }}.svc
{{- end -}}

{{/*
  The namespaces the webhook never sees: the system's, its own (no self-deadlock), the operator's
  list, and any namespace labelled gpuguard.io/webhook=disabled (the break-glass label: only who
  may label namespaces can set it). Then the operator's own selector (opt-in by label).
*/}}
{{- define "gpuguard.namespaceSelector" -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
      - kube-system
      - kube-node-lease
      - {{ .Release.Namespace }}
      {{- range .Values.webhook.excludeNamespaces }}
      - {{ . }}
      {{- end }}
  - key: gpuguard.io/webhook
    operator: NotIn
    values:
      - disabled
  {{- with .Values.webhook.namespaceSelector.matchExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with .Values.webhook.namespaceSelector.matchLabels }}
matchLabels:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
  The first matchCondition of every entry: requests by node identities (kubelets registering and
  updating their Node, creating mirror pods) are never sent. namespaceSelector cannot keep them
  out, since Nodes are cluster-scoped.
*/}}
{{- define "gpuguard.notNodeIdentity" -}}
- name: not-node-identity
  expression: "!('system:nodes' in request.userInfo.groups) && !request.userInfo.username.startsWith('system:node:')"
{{- end -}}

{{/* CEL: the pod requests one of the resource prefixes, or asks for a Multus network. */}}
{{- define "gpuguard.mutateCondition" -}}
{{- $tests := list -}}
{{- range .Values.webhook.mutating.resourcePrefixes -}}
{{- $tests = append $tests (printf "k.startsWith('%s')" .) -}}
{{- end -}}
{{- $match := join " || " $tests -}}
{{- $lists := printf "(has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(k, %s)) || (has(c.resources.requests) && c.resources.requests.exists(k, %s))))" $match $match -}}
object.spec.containers.exists(c, {{ $lists }}) || (has(object.spec.initContainers) && object.spec.initContainers.exists(c, {{ $lists }})) || (has(object.metadata.annotations) && 'k8s.v1.cni.cncf.io/networks' in object.metadata.annotations)
{{- end -}}
