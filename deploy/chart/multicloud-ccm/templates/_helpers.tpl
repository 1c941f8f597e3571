{{/*
Names are fixed, the same as deploy/'s, so RBAC, the Lease and the docs agree
whichever way the manager was installed; one manager runs per cluster.
*/}}
{{- define "mccm.name" -}}cloud-controller-manager{{- end -}}
{{- define "mccm.serviceAccountName" -}}cloud-controller-manager{{- end -}}

{{/* The Secret the manager reads its cloud-config from. */}}
{{- define "mccm.secretName" -}}
{{- .Values.existingSecret | default "cloud-config" -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "mccm.labels" -}}
app.kubernetes.io/name: multicloud-ccm
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The workload's selector: deploy/deployment.yaml's. */}}
{{- define "mccm.selectorLabels" -}}
app.kubernetes.io/name: multicloud-ccm
app.kubernetes.io/component: cloud-controller-manager
{{- end -}}

{{- define "mccm.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* Fails the rendering on values that cannot work. */}}
{{- define "mccm.validate" -}}
{{- if and .Values.cloudConfig .Values.existingSecret -}}
{{- fail "set either cloudConfig or existingSecret, not both" -}}
{{- end -}}
{{- if not (or .Values.cloudConfig .Values.existingSecret) -}}
{{- fail "no cloud-config: set cloudConfig (see examples/values-<cloud>.yaml) or existingSecret" -}}
{{- end -}}
{{- if not (has .Values.kind (list "Deployment" "DaemonSet")) -}}
{{- fail (printf "kind %q: want Deployment or DaemonSet" .Values.kind) -}}
{{- end -}}
{{- if and .Values.clusterCIDR (not .Values.configureCloudRoutes) (not .Values.nodeIPAM.enabled) -}}
{{- fail "clusterCIDR is only used with configureCloudRoutes: true or nodeIPAM.enabled: true" -}}
{{- end -}}
{{- if and .Values.nodeIPAM.enabled (not .Values.clusterCIDR) -}}
{{- fail "nodeIPAM.enabled needs clusterCIDR (--cluster-cidr): the pod range(s) the cloud's ranges come from" -}}
{{- end -}}
{{- end -}}

{{/* The pod template of either workload kind. */}}
{{- define "mccm.podTemplate" -}}
metadata:
  labels:
    {{- include "mccm.labels" . | nindent 4 }}
    app.kubernetes.io/component: cloud-controller-manager
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- if or .Values.podAnnotations (not .Values.existingSecret) }}
  annotations:
    {{- if not .Values.existingSecret }}
    # A changed cloud-config is a new pod template: the pods roll.
    checksum/cloud-config: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
    {{- end }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
spec:
  serviceAccountName: {{ include "mccm.serviceAccountName" . }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  hostNetwork: {{ .Values.hostNetwork }}
  {{- with .Values.dnsPolicy }}
  dnsPolicy: {{ . }}
  {{- end }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  affinity:
  {{- if .Values.affinity }}
    {{- toYaml .Values.affinity | nindent 4 }}
  {{- else if eq .Values.kind "DaemonSet" }}
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - key: node-role.kubernetes.io/control-plane
                operator: Exists
  {{- else }}
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          preference:
            matchExpressions:
              - key: node-role.kubernetes.io/control-plane
                operator: Exists
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "mccm.selectorLabels" . | nindent 14 }}
  {{- end }}
  {{- with .Values.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: cloud-controller-manager
      image: {{ include "mccm.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      command: [/multicloud-ccm]
      args:
        - --cloud-config=/etc/multicloud-ccm/cloud-config.yaml
        - --leader-elect={{ .Values.leaderElection.enabled }}
        - --use-service-account-credentials=false
        - --bind-address=0.0.0.0
        - --secure-port={{ .Values.securePort }}
        {{- with .Values.enabledControllers }}
        - --controllers={{ join "," . }}
        {{- end }}
        - --configure-cloud-routes={{ .Values.configureCloudRoutes }}
        {{- with .Values.clusterCIDR }}
        - --cluster-cidr={{ . }}
        {{- end }}
        {{- with .Values.nodeIPAM }}
        {{- if .enabled }}
        - --allocate-node-cidrs=true
        - --cidr-allocator-type=CloudAllocator
        {{- with .nodeCIDRMaskSizeIPv4 }}
        - --node-cidr-mask-size-ipv4={{ . }}
        {{- end }}
        {{- with .nodeCIDRMaskSizeIPv6 }}
        - --node-cidr-mask-size-ipv6={{ . }}
        {{- end }}
        {{- with .serviceClusterIPRange }}
        - --service-cluster-ip-range={{ . }}
        {{- end }}
        {{- end }}
        {{- end }}
        - --v={{ .Values.logVerbosity }}
        {{- range .Values.extraArgs }}
        - {{ . | quote }}
        {{- end }}
      {{- with .Values.env }}
      env:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      ports:
        - name: https
          containerPort: {{ .Values.securePort }}
          protocol: TCP
      livenessProbe:
        httpGet:
          path: /healthz
          port: {{ .Values.securePort }}
          scheme: HTTPS
        initialDelaySeconds: 20
        periodSeconds: 10
        timeoutSeconds: 5
        failureThreshold: 3
      {{- with .Values.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.securityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        - name: cloud-config
          mountPath: /etc/multicloud-ccm
          readOnly: true
        {{- with .Values.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: cloud-config
      secret:
        secretName: {{ include "mccm.secretName" . }}
        # 288 is octal 0440 (owner and fsGroup read).
        defaultMode: 288
    {{- with .Values.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}
