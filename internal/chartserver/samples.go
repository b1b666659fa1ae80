package chartserver

import "fmt"

// WideChart returns the files of a chart named name at version with n templates, each a
// Deployment and a Service using shared helpers and values: the chart the Helm benchmarks
// render (2n objects).
func WideChart(name, version string, n int) map[string]string {
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n",
		"values.yaml": "image: nginx\ntag: \"1.27\"\nreplicas: 1\nport: 8080\nlabels:\n  team: platform\nresources:\n  limits:\n    cpu: 500m\n    memory: 256Mi\n",
		"templates/_helpers.tpl": `{{- define "bench.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- range $k, $v := .Values.labels }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end -}}
`,
	}
	for i := range n {
		files[fmt.Sprintf("templates/app-%02d.yaml", i)] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-%[1]d
  labels:
    {{- include "bench.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app: {{ .Release.Name }}-%[1]d
  template:
    metadata:
      labels:
        app: {{ .Release.Name }}-%[1]d
    spec:
      containers:
        - name: app
          image: "{{ .Values.image }}:{{ .Values.tag }}"
          ports:
            - containerPort: {{ .Values.port }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-%[1]d
  labels:
    {{- include "bench.labels" . | nindent 4 }}
spec:
  selector:
    app: {{ .Release.Name }}-%[1]d
  ports:
    - port: {{ .Values.port }}
`, i)
	}
	return files
}
