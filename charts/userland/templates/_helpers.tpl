{{/* Chart name. */}}
{{- define "userland.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Prefix of every namespaced object: the release name, or "<release>-userland". */}}
{{- define "userland.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "userland.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Prefix of cluster-scoped objects: unique per release and namespace. */}}
{{- define "userland.clusterPrefix" -}}
{{- printf "%s-%s" .Release.Namespace (include "userland.fullname" .) | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{/* Name of one component's objects: (dict "root" $ "component" "proxy"). */}}
{{- define "userland.componentName" -}}
{{- printf "%s-%s" (include "userland.fullname" .root) .component -}}
{{- end -}}

{{- define "userland.selectorLabels" -}}
app.kubernetes.io/name: {{ include "userland.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "userland.labels" -}}
{{ include "userland.selectorLabels" . }}
app.kubernetes.io/part-of: userland
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels of objects that belong to no single component. */}}
{{- define "userland.commonLabels" -}}
app.kubernetes.io/name: {{ include "userland.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: userland
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "userland.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount user name of a component, as the API server sees it. */}}
{{- define "userland.serviceAccountUser" -}}
{{- printf "system:serviceaccount:%s:%s" .root.Release.Namespace (include "userland.componentName" .) -}}
{{- end -}}

{{- define "userland.publicUrl" -}}
{{- printf "%s://%s" .root.Values.publicScheme .host -}}
{{- end -}}

{{/* The auth service's host name: auth.publicUrl's, or auth.<baseDomain>. */}}
{{- define "userland.authHost" -}}
{{- if .Values.auth.publicUrl -}}
{{- regexReplaceAll ":[0-9]+$" (urlParse .Values.auth.publicUrl).host "" -}}
{{- else -}}
{{- printf "auth.%s" .Values.baseDomain -}}
{{- end -}}
{{- end -}}

{{/* Where browsers reach the auth service, without a trailing slash: auth.publicUrl or auth.<baseDomain>. */}}
{{- define "userland.authUrl" -}}
{{- .Values.auth.publicUrl | default (include "userland.publicUrl" (dict "root" . "host" (include "userland.authHost" .))) | trimSuffix "/" -}}
{{- end -}}

{{/* The Secret with the auth service's session keys: the admin's, or the one the chart keeps. */}}
{{- define "userland.sessionKeysSecret" -}}
{{- .Values.sessionKeys.existingSecret | default (printf "%s-session-keys" (include "userland.fullname" .)) -}}
{{- end -}}

{{/* The key in that Secret (the chart's own Secret holds keys.pem). */}}
{{- define "userland.sessionKeysKey" -}}
{{- if .Values.sessionKeys.existingSecret -}}{{ .Values.sessionKeys.secretKey }}{{- else -}}keys.pem{{- end -}}
{{- end -}}

{{/* The auth Service's port (auth.yaml). */}}
{{- define "userland.authServicePort" -}}80{{- end -}}

{{/* Where the proxy fetches the session keys: the auth Service, inside the cluster. */}}
{{- define "userland.sessionJwksUrl" -}}
{{- printf "http://%s.%s.svc.%s:%s/.well-known/jwks.json" (include "userland.componentName" (dict "root" . "component" "auth")) .Release.Namespace .Values.clusterDomain (include "userland.authServicePort" .) -}}
{{- end -}}

{{/* The teachers' console as browsers reach it: userManager.console.publicUrl, or <baseDomain>/console/. */}}
{{- define "userland.consoleUrl" -}}
{{- .Values.userManager.console.publicUrl | default (printf "%s/console/" (include "userland.publicUrl" (dict "root" . "host" .Values.baseDomain))) -}}
{{- end -}}

{{- define "userland.userManagerUrl" -}}
{{- printf "http://%s.%s.svc.%s" (include "userland.componentName" (dict "root" . "component" "user-manager")) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{/*
The pod spec parts every component shares: (dict "root" $ "component" "proxy" "values" .Values.proxy).
*/}}
{{- define "userland.podCommon" -}}
{{- $root := .root -}}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
{{- with $root.Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
# Replicas on different nodes where possible, so one node's loss is not an outage.
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "userland.selectorLabels" . | nindent 8 }}
{{- end -}}

{{/* Pod metadata: (dict "root" $ "component" "proxy"). */}}
{{- define "userland.podMetadata" -}}
labels:
  {{- include "userland.labels" . | nindent 2 }}
  {{- with .root.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with .root.Values.podAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Container fields every component shares: (dict "root" $ "component" "proxy" "values" .Values.proxy). */}}
{{- define "userland.containerCommon" -}}
image: {{ include "userland.image" .root }}
imagePullPolicy: {{ .root.Values.image.pullPolicy }}
securityContext:
  {{- toYaml .root.Values.securityContext | nindent 2 }}
resources:
  {{- toYaml .values.resources | nindent 2 }}
{{- end -}}

{{/*
A serving container keeps answering for endpointDrainSeconds after its pod starts terminating: the
pod leaves the Service's endpoints at once, but kube-proxy and Ingress controllers follow a moment
later, and a process that closed its listener by then would refuse what they still send it.
*/}}
{{- define "userland.endpointDrain" -}}
{{- with .root.Values.endpointDrainSeconds -}}
lifecycle:
  preStop:
    sleep: { seconds: {{ . }} }
{{- end }}
{{- end -}}

{{/*
Liveness counts only once a component has started: (dict "root" $ "port" "http"), the port its
/healthz is on. Seen on two loaded cores: auth took 40 s to listen, the liveness probe (30 s) killed
both replicas at once and the proxy lost its session keys' source.
*/}}
{{- define "userland.startupProbe" -}}
startupProbe:
  httpGet: { path: /healthz, port: {{ .port }} }
  periodSeconds: 2
  failureThreshold: {{ div .root.Values.startupSeconds 2 }}
{{- end -}}

{{/* Env vars every component gets. */}}
{{- define "userland.commonEnv" -}}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: USERLAND_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: NODE_ENV
  value: production
{{- end -}}

{{/* A PodDisruptionBudget when a component runs more than one replica. */}}
{{- define "userland.pdb" -}}
{{- if gt (int .values.replicas) 1 }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "userland.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "userland.labels" . | nindent 4 }}
spec:
  {{- $pdb := .values.podDisruptionBudget | default dict }}
  maxUnavailable: {{ hasKey $pdb "maxUnavailable" | ternary $pdb.maxUnavailable 1 }}
  selector:
    matchLabels:
      {{- include "userland.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end -}}

{{/*
The chart's env vars (a YAML list in .base) with .extra appended; an extra entry replaces the chart's
entry of the same name, so each name appears once (server-side apply rejects duplicate keys).
*/}}
{{- define "userland.mergeEnv" -}}
{{- $extra := .extra | default list -}}
{{- $names := list -}}
{{- range $extra }}{{ $names = append $names .name }}{{ end -}}
{{- $out := list -}}
{{- range (fromYamlArray .base) }}{{ if not (has .name $names) }}{{ $out = append $out . }}{{ end }}{{ end -}}
{{- toYaml (concat $out $extra) -}}
{{- end -}}

{{/*
The namespaces whose Templates and Userlands the release serves, as JSON: watchNamespaces, or the
release namespace when it is empty; ["*"] is every namespace (docs/decisions/0010-namespaces.md).
*/}}
{{- define "userland.servedNamespaces" -}}
{{- $list := .Values.watchNamespaces | default (list .Release.Namespace) -}}
{{- if and (has "*" $list) (gt (len $list) 1) -}}
{{- fail "watchNamespaces: \"*\" (every namespace) cannot be combined with namespace names" -}}
{{- end -}}
{{- toJson (uniq $list) -}}
{{- end -}}

{{/* USERLAND_WATCH_NAMESPACES for the operator, proxy and user-manager; unset by default (their own namespace). */}}
{{- define "userland.watchNamespacesEnv" -}}
{{- if .Values.watchNamespaces }}
- name: USERLAND_WATCH_NAMESPACES
  value: {{ join "," (include "userland.servedNamespaces" . | fromJsonArray) | quote }}
{{- end }}
{{- end -}}

{{/*
A component's rights where Userlands are served: a Role and a RoleBinding in each served namespace,
or, for "*", one ClusterRole and ClusterRoleBinding. `ownRules` (the operator's Lease) go into a
Role in the release namespace alone, served or not. (dict "ctx" $component "rules" <yaml>
"ownRules" <yaml or ""> "suffix" <after the component's name, or "">)
*/}}
{{- define "userland.servedRbac" -}}
{{- $root := .ctx.root -}}
{{- $own := $root.Release.Namespace -}}
{{- $served := include "userland.servedNamespaces" $root | fromJsonArray -}}
{{- $all := has "*" $served -}}
{{- $sa := include "userland.componentName" .ctx -}}
{{- $name := printf "%s%s" $sa (.suffix | default "") -}}
{{- $clusterName := printf "%s-%s%s-all-namespaces" (include "userland.clusterPrefix" $root) .ctx.component (.suffix | default "") -}}
{{- $roles := list -}}
{{- if not $all -}}
{{- range $served -}}
{{- $rules := $.rules -}}
{{- if and $.ownRules (eq . $own) }}{{ $rules = printf "%s%s" $.rules $.ownRules }}{{ end -}}
{{- $roles = append $roles (dict "namespace" . "rules" $rules) -}}
{{- end -}}
{{- end -}}
{{- if and .ownRules (or $all (not (has $own $served))) -}}
{{- $roles = append $roles (dict "namespace" $own "rules" .ownRules) -}}
{{- end -}}
{{- range $i, $role := $roles }}
{{- if $i }}
---
{{ end -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  namespace: {{ $role.namespace }}
  labels:
    {{- include "userland.labels" $.ctx | nindent 4 }}
rules:{{ $role.rules }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  namespace: {{ $role.namespace }}
  labels:
    {{- include "userland.labels" $.ctx | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $own }}
{{- end }}
{{- if $all }}
{{- if $roles }}
---
{{ end -}}
# Every namespace (watchNamespaces: ["*"]): the same rights cluster-wide.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $clusterName }}
  labels:
    {{- include "userland.labels" .ctx | nindent 4 }}
rules:{{ .rules }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $clusterName }}
  labels:
    {{- include "userland.labels" .ctx | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $clusterName }}
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $own }}
{{- end }}
{{- end -}}

{{/*
A Role and its RoleBinding in the release's own namespace for one component's ServiceAccount, named
with `suffix`: rights on what the platform keeps there (session records), never on students'
namespaces. Takes ctx (root + component), rules and suffix.
*/}}
{{- define "userland.ownRbac" -}}
{{- $root := .ctx.root -}}
{{- $sa := include "userland.componentName" .ctx -}}
{{- $name := printf "%s%s" $sa .suffix -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "userland.labels" .ctx | nindent 4 }}
rules:{{ .rules }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "userland.labels" .ctx | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $root.Release.Namespace }}
{{- end -}}
