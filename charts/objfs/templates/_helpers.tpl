{{/* The CSI driver name: fixed, objfs-csi reports it in GetPluginInfo. */}}
{{- define "objfs.driverName" -}}
objfs.csi.io
{{- end -}}

{{- define "objfs.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Prefix of every object name, at most 50 characters so suffixes fit. */}}
{{- define "objfs.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "objfs.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "objfs.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels; call with (dict "root" $ "component" "controller"). */}}
{{- define "objfs.selectorLabels" -}}
app.kubernetes.io/name: {{ include "objfs.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "objfs.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* "repository:tag" of a sidecar image block. */}}
{{- define "objfs.sidecarImage" -}}
{{- printf "%s:%s" .repository .tag -}}
{{- end -}}

{{/* Name of the Secret with the S3 keys, empty when there is none. */}}
{{- define "objfs.secretName" -}}
{{- $c := .Values.s3.credentials -}}
{{- if $c.existingSecret -}}
{{- $c.existingSecret -}}
{{- else if $c.create -}}
{{- default (printf "%s-s3" (include "objfs.fullname" .)) $c.name -}}
{{- end -}}
{{- end -}}

{{/* Name of the ConfigMap with the CA bundle, empty when there is none. */}}
{{- define "objfs.caConfigMap" -}}
{{- if .Values.s3.existingCaConfigMap -}}
{{- .Values.s3.existingCaConfigMap -}}
{{- else if .Values.s3.caBundle -}}
{{- printf "%s-ca" (include "objfs.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Where the CA bundle is mounted in objfs-csi containers. */}}
{{- define "objfs.caDir" -}}
/etc/objfs/ca
{{- end -}}

{{/* The CSI socket inside every pod: an emptyDir (controller) or the
     plugin hostPath directory (node), mounted at /csi. */}}
{{- define "objfs.socketDir" -}}
/csi
{{- end -}}
{{- define "objfs.socketPath" -}}
{{- include "objfs.socketDir" . }}/csi.sock
{{- end -}}

{{/* Node plugin directory on the host (kubelet dials the socket there). */}}
{{- define "objfs.pluginDir" -}}
{{- printf "%s/plugins/%s" (trimSuffix "/" .Values.kubeletDir) (include "objfs.driverName" .) -}}
{{- end -}}

{{/* Who runs the node's mount processes: host-systemd (node.hostSystemd),
     holder (the objfs-holder DaemonSet, holder.enabled: the default) or
     fork (the node plugin's own container). */}}
{{- define "objfs.mountRunner" -}}
{{- if .Values.node.hostSystemd.enabled -}}
host-systemd
{{- else if .Values.holder.enabled -}}
holder
{{- else -}}
fork
{{- end -}}
{{- end -}}

{{/* The node DaemonSet's update strategy: node.updateStrategy if set, else
     the one safe for the mounts (see values.yaml): RollingUpdate when the
     mounts live outside the node pod (holder, host systemd units), OnDelete
     when they live in it and die with it. */}}
{{- define "objfs.nodeUpdateStrategy" -}}
{{- if .Values.node.updateStrategy -}}
{{- toYaml .Values.node.updateStrategy -}}
{{- else if ne (include "objfs.mountRunner" .) "fork" -}}
type: RollingUpdate
rollingUpdate:
  maxUnavailable: 1
{{- else -}}
type: OnDelete
{{- end -}}
{{- end -}}

{{/* The holder container's resources: holder.resources, whose memory limit,
     unless holder.resources.limits.memory is set, is computed so that every
     slot can hold a mount at its bound: holder.maxSlots x
     node.mountMemoryMiB + holder.memoryBaseMiB, in Mi. */}}
{{- define "objfs.holderResources" -}}
{{- $h := .Values.holder -}}
{{- $r := deepCopy ($h.resources | default dict) -}}
{{- $lim := $r.limits | default dict -}}
{{- if not $lim.memory -}}
{{- $_ := set $lim "memory" (printf "%dMi" (add (mul (int $h.maxSlots) (int .Values.node.mountMemoryMiB)) (int $h.memoryBaseMiB))) -}}
{{- end -}}
{{- $_ := set $r "limits" $lim -}}
{{- toYaml $r -}}
{{- end -}}

{{/* The system-* priority classes (system-node-critical,
     system-cluster-critical) the release's pods use, sorted, joined by commas;
     empty when none.  Outside kube-system, clusters that restrict them (GKE
     and any with an admission-controller LimitedResources entry for
     PriorityClass) admit such pods only under a ResourceQuota that names
     the class (criticalPodsQuota). */}}
{{- define "objfs.systemPriorityClasses" -}}
{{- $pcs := list .Values.controller.priorityClassName .Values.node.priorityClassName -}}
{{- if eq (include "objfs.mountRunner" .) "holder" -}}
{{- $pcs = append $pcs .Values.holder.priorityClassName -}}
{{- end -}}
{{- $sys := list -}}
{{- range $pcs -}}
{{- if and . (hasPrefix "system-" (toString .)) -}}
{{- $sys = append $sys (toString .) -}}
{{- end -}}
{{- end -}}
{{- $sys | uniq | sortAlpha | join "," -}}
{{- end -}}

{{- define "objfs.validate" -}}
{{- if not (has .Values.logLevel (list "debug" "info" "warn" "error")) -}}
{{- fail (printf "logLevel must be debug, info, warn or error, not %q" .Values.logLevel) -}}
{{- end -}}
{{- if not (has .Values.s3.addressingStyle (list "path" "virtual")) -}}
{{- fail (printf "s3.addressingStyle must be path or virtual, not %q" .Values.s3.addressingStyle) -}}
{{- end -}}
{{- if not (has .Values.storageClass.onDelete (list "delete" "retain" "archive")) -}}
{{- fail (printf "storageClass.onDelete must be delete, retain or archive, not %q" .Values.storageClass.onDelete) -}}
{{- end -}}
{{- if and .Values.s3.credentials.create .Values.s3.credentials.existingSecret -}}
{{- fail "set either s3.credentials.create or s3.credentials.existingSecret, not both" -}}
{{- end -}}
{{- if .Values.s3.credentials.create -}}
{{- if not (and .Values.s3.credentials.accessKeyID .Values.s3.credentials.secretAccessKey) -}}
{{- fail "s3.credentials.create needs s3.credentials.accessKeyID and s3.credentials.secretAccessKey" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.s3.caBundle .Values.s3.existingCaConfigMap -}}
{{- fail "set either s3.caBundle or s3.existingCaConfigMap, not both" -}}
{{- end -}}
{{- if not (hasPrefix "/" .Values.kubeletDir) -}}
{{- fail "kubeletDir must be an absolute path" -}}
{{- end -}}
{{- if not (hasPrefix "/" .Values.node.stateDir) -}}
{{- fail "node.stateDir must be an absolute path" -}}
{{- end -}}
{{- if lt (int .Values.node.mountMemoryMiB) 16 -}}
{{- fail "node.mountMemoryMiB must be at least 16" -}}
{{- end -}}
{{- if or (lt (int .Values.holder.maxSlots) 1) (gt (int .Values.holder.maxSlots) 4096) -}}
{{- fail "holder.maxSlots must be between 1 and 4096" -}}
{{- end -}}
{{- if lt (int .Values.holder.memoryBaseMiB) 8 -}}
{{- fail "holder.memoryBaseMiB must be at least 8" -}}
{{- end -}}
{{- if and .Values.criticalPodsQuota.create (lt (int .Values.criticalPodsQuota.pods) 1) -}}
{{- fail "criticalPodsQuota.pods must be at least 1" -}}
{{- end -}}
{{- if .Values.metrics.enabled -}}
{{- $np := int .Values.metrics.nodePort -}}
{{- if or (eq $np (int .Values.node.healthPort)) (eq $np (int .Values.node.registrar.healthPort)) -}}
{{- fail "metrics.nodePort must differ from node.healthPort and node.registrar.healthPort" -}}
{{- end -}}
{{- if eq (int .Values.metrics.controllerPort) (int .Values.controller.healthPort) -}}
{{- fail "metrics.controllerPort must differ from controller.healthPort" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* objfs-csi arguments shared by both roles: log level and default store.
     One "- flag" and one "- value" item each, as getopt_long accepts. */}}
{{/* objfs-csi's metrics flag for a pod: call with (dict "root" . "port" N).
     On the pod's own IP (metrics.bindPodIP; POD_IP from objfs.metricsEnv,
     in brackets so that an IPv6 address parses too), else every interface. */}}
{{- define "objfs.metricsArgs" -}}
{{- if .root.Values.metrics.enabled }}
- --metrics-address
{{- if .root.Values.metrics.bindPodIP }}
- {{ printf "[$(POD_IP)]:%d" (int .port) | quote }}
{{- else }}
- {{ printf "0.0.0.0:%d" (int .port) | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* POD_IP (status.podIP) for --metrics-address, when it is used. */}}
{{- define "objfs.metricsEnv" -}}
{{- if and .Values.metrics.enabled .Values.metrics.bindPodIP }}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- end }}
{{- end -}}

{{/* The container port of /metrics: (dict "root" . "port" N). */}}
{{- define "objfs.metricsPort" -}}
{{- if .root.Values.metrics.enabled }}
- name: metrics
  containerPort: {{ int .port }}
  protocol: TCP
{{- end }}
{{- end -}}

{{- define "objfs.commonArgs" -}}
- --endpoint
- unix://{{ include "objfs.socketPath" . }}
- --log-level
- {{ .Values.logLevel | quote }}
{{- if .Values.s3.bucket }}
{{- $prefix := trimAll "/" .Values.s3.basePrefix }}
- --store
- {{ printf "s3://%s%s" .Values.s3.bucket (ternary (printf "/%s" $prefix) "" (ne $prefix "")) | quote }}
{{- end }}
{{- with .Values.s3.endpoint }}
- --s3-endpoint
- {{ . | quote }}
{{- end }}
{{- with .Values.s3.region }}
- --s3-region
- {{ . | quote }}
{{- end }}
- --s3-addressing
- {{ .Values.s3.addressingStyle | quote }}
{{- if include "objfs.caConfigMap" . }}
- --s3-ca-file
- {{ printf "%s/%s" (include "objfs.caDir" .) .Values.s3.caBundleKey | quote }}
{{- end }}
{{- end -}}

{{/* AWS_* variables from the S3 Secret for objfs-csi's default store. */}}
{{- define "objfs.credentialEnv" -}}
{{- with include "objfs.secretName" . }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: accessKeyID
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: secretAccessKey
- name: AWS_SESSION_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: sessionToken
      optional: true
{{- end }}
{{- end -}}

{{- define "objfs.caVolumeMount" -}}
{{- if include "objfs.caConfigMap" . }}
- name: ca-bundle
  mountPath: {{ include "objfs.caDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{- define "objfs.caVolume" -}}
{{- with include "objfs.caConfigMap" . }}
- name: ca-bundle
  configMap:
    name: {{ . }}
    items:
      - key: {{ $.Values.s3.caBundleKey }}
        path: {{ $.Values.s3.caBundleKey }}
{{- end }}
{{- end -}}
