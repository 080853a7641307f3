{{/* Names and labels shared by the templates. */}}
{{- define "benchstream.labels" -}}
app.kubernetes.io/name: benchstream
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "benchstream.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* KAFKA_BROKERS: Strimzi's bootstrap service, or the brokers given. */}}
{{- define "benchstream.kafkaBrokers" -}}
{{- if .Values.kafka.enabled -}}
{{ .Values.kafka.name }}-kafka-bootstrap:9092
{{- else -}}
{{ required "kafka.externalBrokers is required when kafka.enabled is false" .Values.kafka.externalBrokers }}
{{- end -}}
{{- end }}

{{/* CLICKHOUSE_URL: the Altinity operator's service over every replica (clickhouse-<name>), or the URL given. */}}
{{- define "benchstream.clickhouseUrl" -}}
{{- if .Values.clickhouse.enabled -}}
http://clickhouse-{{ .Values.clickhouse.name }}:8123
{{- else -}}
{{ required "clickhouse.externalUrl is required when clickhouse.enabled is false" .Values.clickhouse.externalUrl }}
{{- end -}}
{{- end }}

{{/* CLICKHOUSE_CLUSTER: the ClickHouseInstallation's cluster, or the one given (empty: a single server). */}}
{{- define "benchstream.clickhouseCluster" -}}
{{- if .Values.clickhouse.enabled -}}
{{ .Values.clickhouse.cluster }}
{{- else -}}
{{ .Values.clickhouse.externalCluster }}
{{- end -}}
{{- end }}

{{/* Credentials from the Secret (secretName): never values of the chart. */}}
{{- define "benchstream.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
{{- end }}
