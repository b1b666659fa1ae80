package main

import (
	"bytes"
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

func TestImportConvertsArgoCDYAML(t *testing.T) {
	tests := []struct {
		name      string
		files     []string
		namespace string
		// want lists the printed objects as "Kind namespace/name", in order.
		want []string
		// warnings and errors are substrings of the lines of stderr that start with
		// "warning: " and "error: ", one per line, in order.
		warnings, errors []string
		wantErr          bool
	}{
		{
			name:  "a team's Argo CD objects",
			files: []string{"testdata/import/argocd-export.yaml"},
			want: []string{
				"Application argocd/guestbook", "ApplicationSet argocd/monitoring",
				"Secret navarch-system/prod-eu-kubeconfig", "Cluster prod-eu", "Cluster in-cluster",
				"Project navarch-system/team-a", "Secret navarch-system/repo-deploy-repo",
			},
			warnings: []string{
				"Application argocd/guestbook (testdata/import/argocd-export.yaml document 1): metadata.finalizers: dropped",
				"Application argocd/guestbook (testdata/import/argocd-export.yaml document 1): status: dropped",
				"Secret argocd/prod-eu-cluster (testdata/import/argocd-export.yaml document 3): stringData.project: dropped: navarch Clusters belong to no Project; a Project restricts the clusters its Applications deploy to with spec.destinations",
				"Secret argocd/in-cluster (testdata/import/argocd-export.yaml document 4): data.config: dropped: navarch reaches the cluster it runs in",
				`AppProject argocd/team-a (testdata/import/argocd-export.yaml document 5): metadata.namespace: "argocd" becomes "navarch-system"`,
				"AppProject argocd/team-a (testdata/import/argocd-export.yaml document 5): spec.sourceNamespaces: empty: only Applications and ApplicationSets in navarch-system may name this Project",
			},
		},
		{
			name:      "a List from kubectl get, moved to another namespace",
			files:     []string{"testdata/import/list.yaml"},
			namespace: "apps",
			want:      []string{"Application apps/api", "Application apps/web"},
			warnings: []string{
				`Application argocd/api (testdata/import/list.yaml document 1 item 1): status: dropped`,
				`Application argocd/api (testdata/import/list.yaml document 1 item 1): metadata.namespace: "argocd" becomes "apps" (--namespace)`,
				`Application argocd/web (testdata/import/list.yaml document 1 item 2): metadata.namespace: "argocd" becomes "apps" (--namespace)`,
			},
		},
		{
			name:  "nothing that can be converted, next to a file that can",
			files: []string{"testdata/import/unsupported.yaml", "testdata/import/list.yaml"},
			want:  []string{"Application argocd/api", "Application argocd/web"},
			warnings: []string{
				"Application argocd/api (testdata/import/list.yaml document 1 item 1): status",
			},
			errors: []string{
				"open testdata/import/missing.yaml: no such file",
				"Application argocd/payments (testdata/import/unsupported.yaml document 1): spec.source.plugin: config management plugins are not supported",
				"Secret eks (testdata/import/unsupported.yaml document 2): stringData.config.awsAuthConfig: AWS IAM authentication is not supported",
				"Deployment not-argo (testdata/import/unsupported.yaml document 3): not an Argo CD Application, ApplicationSet, AppProject, cluster or repository Secret",
				"AppProject argocd/signed (testdata/import/unsupported.yaml document 4): spec.signatureKeys: navarch does not verify commit signatures",
			},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := tt.files
			if strings.HasPrefix(tt.name, "nothing") {
				files = append(files, "testdata/import/missing.yaml")
			}
			o := &importOptions{files: files, namespace: tt.namespace, systemNamespace: "navarch-system"}
			var stdout, stderr bytes.Buffer
			err := o.run(&stdout, &stderr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v\nstderr:\n%s", err, tt.wantErr, stderr.String())
			}
			if got := printedObjects(t, stdout.String()); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("printed\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
			assertLines(t, "warning: ", stderr.String(), tt.warnings)
			assertLines(t, "error: ", stderr.String(), tt.errors)
		})
	}
}

// printedObjects decodes the YAML documents of stdout as "Kind namespace/name".
func printedObjects(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, doc := range strings.Split(out, "---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var obj struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
			Status   any
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("stdout is not YAML: %v\n%s", err, doc)
		}
		if obj.Status != nil {
			t.Errorf("%s %s printed with a status", obj.Kind, obj.Metadata.Name)
		}
		got = append(got, obj.Kind+" "+qualified(obj.Metadata.Namespace, obj.Metadata.Name))
	}
	return got
}

// assertLines checks that the lines of out starting with prefix contain want, in order.
func assertLines(t *testing.T, prefix, out string, want []string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			lines = append(lines, strings.TrimPrefix(l, prefix))
		}
	}
	if len(lines) != len(want) {
		t.Errorf("%d %q lines, want %d:\n%s", len(lines), prefix, len(want), out)
		return
	}
	for i := range want {
		if !strings.Contains(lines[i], want[i]) {
			t.Errorf("%q line %d:\n  %s\nwant it to contain\n  %s", prefix, i+1, lines[i], want[i])
		}
	}
}

func TestImportedClusterSecretHoldsAWorkingKubeconfig(t *testing.T) {
	o := &importOptions{files: []string{"testdata/import/argocd-export.yaml"}, systemNamespace: "navarch-system"}
	var stdout, stderr bytes.Buffer
	_ = o.run(&stdout, &stderr)
	var secret struct {
		Data map[string]string
	}
	var cluster struct {
		Metadata struct{ Labels map[string]string }
		Spec     map[string]any
	}
	for _, doc := range strings.Split(stdout.String(), "---\n") {
		switch {
		case strings.Contains(doc, "kind: Secret") && strings.Contains(doc, "name: prod-eu-kubeconfig"):
			if err := yaml.Unmarshal([]byte(doc), &secret); err != nil {
				t.Fatal(err)
			}
		case strings.Contains(doc, "kind: Cluster") && strings.Contains(doc, "name: prod-eu\n"):
			if err := yaml.Unmarshal([]byte(doc), &cluster); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, err := base64.StdEncoding.DecodeString(secret.Data["value"])
	if err != nil {
		t.Fatalf("Secret data.value: %v", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatalf("the kubeconfig does not load: %v\n%s", err, data)
	}
	if cfg.Host != "https://prod-eu.example.com:6443" || cfg.BearerToken != "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0" || !strings.Contains(string(cfg.CAData), "BEGIN CERTIFICATE") {
		t.Errorf("kubeconfig host %s token %q CA %q", cfg.Host, cfg.BearerToken, cfg.CAData)
	}
	if cluster.Metadata.Labels["env"] != "prod" || cluster.Metadata.Labels["region"] != "eu" {
		t.Errorf("Cluster labels %v, want env=prod region=eu", cluster.Metadata.Labels)
	}
	ref, _ := cluster.Spec["kubeconfigSecretRef"].(map[string]any)
	if cluster.Spec["server"] != "https://prod-eu.example.com:6443" || ref["name"] != "prod-eu-kubeconfig" || ref["namespace"] != "navarch-system" {
		t.Errorf("Cluster spec %v", cluster.Spec)
	}
}

// TestImportPrintsNavarchYAML converts Argo CD YAML as teams keep it and compares what is
// printed, object for object, with the navarch YAML a user would apply.
func TestImportPrintsNavarchYAML(t *testing.T) {
	tests := []struct {
		name string
		file string
		// want is the YAML printed on stdout.
		want string
		// warnings and errors are substrings of the lines of stderr that start with
		// "warning: " and "error: ", one per line, in order.
		warnings, errors []string
		// secrets are values of the input that stderr must never show.
		secrets []string
	}{
		{
			name: "a chart with its values in a ref source, and a chart from an OCI registry",
			file: "testdata/import/helm-sources.yaml",
			want: `
apiVersion: navarch.io/v1alpha1
kind: Application
metadata: {name: redis, namespace: argocd}
spec:
  project: default
  sources:
  - repoURL: https://charts.bitnami.com/bitnami
    chart: redis
    targetRevision: 19.6.4
    helm:
      releaseName: cache
      valueFiles: [$values/redis/values.yaml, $values/redis/prod.yaml]
      parameters: [{name: replica.replicaCount, value: "3"}]
      skipTests: true
  - {repoURL: https://github.com/org/config.git, targetRevision: main, ref: values}
  destination: {name: prod-eu, namespace: data}
  syncPolicy: {automated: {prune: true}}
  revisionHistoryLimit: 10
---
apiVersion: navarch.io/v1alpha1
kind: Application
metadata: {name: nginx, namespace: argocd}
spec:
  project: default
  source:
    repoURL: oci://registry-1.docker.io/bitnamicharts
    chart: nginx
    targetRevision: 18.1.0
    helm: {valuesObject: {service: {type: ClusterIP}}}
  destination: {name: prod-eu, namespace: web}
  revisionHistoryLimit: 10
`,
			warnings: []string{
				`Application argocd/nginx (testdata/import/helm-sources.yaml document 2): spec.source.repoURL: becomes "oci://registry-1.docker.io/bitnamicharts"`,
			},
		},
		{
			name: "an AppProject with every field navarch has, and Argo CD-only fields that are safe to drop",
			file: "testdata/import/appproject.yaml",
			want: `
apiVersion: navarch.io/v1alpha1
kind: Project
metadata:
  name: payments
  namespace: navarch-system
  labels: {team: payments}
spec:
  description: Payments services
  sourceRepos: ['https://github.com/org/payments*', '!https://github.com/org/payments-legacy.git']
  destinations:
  - {name: in-cluster, namespace: payments-*}
  - {server: 'https://prod-eu.example.com:6443', namespace: payments}
  - {name: '*', server: '*', namespace: '!kube-system'}
  clusterResourceWhitelist: [{group: '', kind: Namespace}]
  clusterResourceBlacklist: [{group: rbac.authorization.k8s.io, kind: '*'}]
  namespaceResourceWhitelist: [{group: '*', kind: '*'}]
  namespaceResourceBlacklist: [{group: '', kind: ResourceQuota}]
  sourceNamespaces: [payments]
  syncWindows:
  - {kind: deny, schedule: '0 22 * * 5', duration: 60h, applications: ['*'], manualSync: true, timeZone: Europe/Berlin}
`,
			warnings: []string{
				"AppProject argocd/payments (testdata/import/appproject.yaml document 1): spec.orphanedResources: dropped: navarch does not report orphaned resources",
				"AppProject argocd/payments (testdata/import/appproject.yaml document 1): spec.permitOnlyProjectScopedClusters: dropped: false",
				"AppProject argocd/payments (testdata/import/appproject.yaml document 1): spec.roles: dropped: navarch has no project roles and tokens; who may see and change Applications is Kubernetes RBAC on their namespace",
				"AppProject argocd/payments (testdata/import/appproject.yaml document 1): spec.signatureKeys: dropped: empty",
				"AppProject argocd/payments (testdata/import/appproject.yaml document 1): spec.syncWindows[0].andOperator: dropped: false",
				"AppProject argocd/payments (testdata/import/appproject.yaml document 1): spec.syncWindows[0].description: dropped: informational only",
				"AppProject argocd/payments (testdata/import/appproject.yaml document 1): metadata.finalizers: dropped",
				`AppProject argocd/payments (testdata/import/appproject.yaml document 1): metadata.namespace: "argocd" becomes "navarch-system": navarch reads Projects in its controller's namespace`,
				"AppProject argocd/payments (testdata/import/appproject.yaml document 1): status: dropped: a navarch Project has no status",
			},
		},
		{
			name: "HTTPS basic authentication, given as data, as argocd repo add writes it",
			file: "testdata/import/repo-https.yaml",
			want: `
apiVersion: v1
kind: Secret
metadata:
  name: repo-repo-1856212583
  namespace: navarch-system
  labels: {navarch.io/secret-type: repository}
type: Opaque
stringData:
  url: https://github.com/org/deploy.git
  type: git
  username: bot
  password: example-deploy-token
`,
			warnings: []string{
				"Secret argocd/repo-1856212583 (testdata/import/repo-https.yaml document 1): data.insecure: not carried over: navarch always verifies TLS certificates; add the repository's CA to caData",
				"Secret argocd/repo-1856212583 (testdata/import/repo-https.yaml document 1): data.name: dropped: informational only",
				"Secret argocd/repo-1856212583 (testdata/import/repo-https.yaml document 1): data.project: dropped: navarch repository credentials are not per project yet",
				"Secret argocd/repo-1856212583 (testdata/import/repo-https.yaml document 1): metadata.annotations.managed-by: dropped: Argo CD bookkeeping",
			},
			secrets: []string{"example-deploy-token"},
		},
		{
			name: "an SSH deploy key",
			file: "testdata/import/repo-ssh.yaml",
			want: `
apiVersion: v1
kind: Secret
metadata:
  name: repo-deploy-key
  namespace: navarch-system
  labels: {navarch.io/secret-type: repository}
type: Opaque
stringData:
  url: git@github.com:org/deploy.git
  type: git
  sshPrivateKey: |
    -----BEGIN OPENSSH PRIVATE KEY-----
    ZmFrZS1zc2gta2V5LWZvci10ZXN0cw==
    -----END OPENSSH PRIVATE KEY-----
`,
			warnings: []string{
				"Secret argocd/deploy-key (testdata/import/repo-ssh.yaml document 1): stringData.enableLfs: dropped: Git LFS is not supported",
				"Secret argocd/deploy-key (testdata/import/repo-ssh.yaml document 1): stringData.insecureIgnoreHostKey: not carried over: navarch always checks SSH host keys; put the host's key in the ConfigMap navarch-ssh-known-hosts (key ssh_known_hosts)",
			},
			secrets: []string{"ZmFrZS1zc2gta2V5LWZvci10ZXN0cw=="},
		},
		{
			name: "a Helm repository with a TLS client certificate",
			file: "testdata/import/repo-helm-tls.yaml",
			want: `
apiVersion: v1
kind: Secret
metadata:
  name: repo-internal-charts
  namespace: navarch-system
  labels: {navarch.io/secret-type: repository}
type: Opaque
stringData:
  url: https://charts.example.com/stable
  type: helm
  tlsClientCertData: |
    -----BEGIN CERTIFICATE-----
    ZmFrZS1jbGllbnQtY2VydA==
    -----END CERTIFICATE-----
  tlsClientCertKey: |
    -----BEGIN EC PRIVATE KEY-----
    ZmFrZS1jbGllbnQta2V5
    -----END EC PRIVATE KEY-----
`,
			warnings: []string{
				"Secret argocd/internal-charts (testdata/import/repo-helm-tls.yaml document 1): stringData.name: dropped: informational only",
			},
			secrets: []string{"ZmFrZS1jbGllbnQtY2VydA==", "ZmFrZS1jbGllbnQta2V5"},
		},
		{
			name: "an OCI registry with enableOCI, over plain HTTP",
			file: "testdata/import/repo-oci.yaml",
			want: `
apiVersion: v1
kind: Secret
metadata:
  name: repo-registry
  namespace: navarch-system
  labels: {navarch.io/secret-type: repository}
type: Opaque
stringData:
  url: oci://registry.example.com:5000/charts
  type: oci
  plainHTTP: "true"
  username: robot
  password: oci-Pa55word
`,
			warnings: []string{
				"Secret argocd/registry (testdata/import/repo-oci.yaml document 1): stringData.name: dropped: informational only",
				"Secret argocd/registry (testdata/import/repo-oci.yaml document 1): stringData.url: prefixed with oci://",
			},
			secrets: []string{"oci-Pa55word"},
		},
		{
			name: "repo-creds: a group, a prefix ending inside a path segment, a GitHub App",
			file: "testdata/import/repo-creds.yaml",
			want: `
apiVersion: v1
kind: Secret
metadata:
  name: repo-gitlab-group
  namespace: navarch-system
  labels: {navarch.io/secret-type: repository}
type: Opaque
stringData: {url: https://gitlab.example.com/platform, type: git, username: oauth2, password: example-group-token}
---
apiVersion: v1
kind: Secret
metadata:
  name: repo-team-repos
  namespace: navarch-system
  labels: {navarch.io/secret-type: repository}
type: Opaque
stringData: {url: https://github.com/org/team-, type: git, password: example-team-token}
`,
			warnings: []string{
				"Secret argocd/team-repos (testdata/import/repo-creds.yaml document 2): stringData.url: the prefix ends inside a path segment: Argo CD matches it as a string, navarch matches whole path segments",
				"Secret argocd/github-app (testdata/import/repo-creds.yaml document 3): stringData.githubAppID: dropped: GitHub App credentials are not supported",
				"Secret argocd/github-app (testdata/import/repo-creds.yaml document 3): stringData.githubAppInstallationID: dropped: GitHub App credentials are not supported",
				"Secret argocd/github-app (testdata/import/repo-creds.yaml document 3): stringData.githubAppPrivateKey: dropped: GitHub App credentials are not supported",
				"Secret argocd/github-app (testdata/import/repo-creds.yaml document 3): data: not converted: no credentials navarch can use",
			},
			secrets: []string{"example-group-token", "example-team-token", "ZmFrZS1naXRodWItYXBwLWtleQ=="},
		},
		{
			name: "SSH known hosts, and CA certificates that are not converted",
			file: "testdata/import/trust.yaml",
			want: `
apiVersion: v1
kind: ConfigMap
metadata: {name: navarch-ssh-known-hosts, namespace: navarch-system}
data:
  ssh_known_hosts: |
    github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl
`,
			warnings: []string{
				"ConfigMap argocd/argocd-ssh-known-hosts-cm (testdata/import/trust.yaml document 1): metadata.labels: dropped",
			},
			errors: []string{
				"ConfigMap argocd/argocd-tls-certs-cm (testdata/import/trust.yaml document 2): data: not converted: navarch keeps no CA certificates by host; put the CA of a repository's host in caData",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &importOptions{files: []string{tt.file}, systemNamespace: "navarch-system"}
			var stdout, stderr bytes.Buffer
			err := o.run(&stdout, &stderr)
			if (err != nil) != (len(tt.errors) > 0) {
				t.Fatalf("err = %v, want an error: %v\nstderr:\n%s", err, len(tt.errors) > 0, stderr.String())
			}
			got, want := yamlDocuments(t, stdout.String()), yamlDocuments(t, tt.want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("printed\n%s\nwant\n%s", stdout.String(), strings.TrimPrefix(tt.want, "\n"))
			}
			assertLines(t, "warning: ", stderr.String(), tt.warnings)
			assertLines(t, "error: ", stderr.String(), tt.errors)
			for _, s := range tt.secrets {
				if strings.Contains(stderr.String(), s) {
					t.Errorf("stderr shows a Secret value:\n%s", stderr.String())
				}
			}
		})
	}
}

// yamlDocuments decodes a stream of YAML documents, for comparing objects rather than their
// layout.
func yamlDocuments(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, doc := range strings.Split(stream, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		docs = append(docs, m)
	}
	return docs
}
