package main

import (
	"bytes"
	"encoding/base64"
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
			},
			warnings: []string{
				"Application argocd/guestbook (testdata/import/argocd-export.yaml document 1): spec.project: dropped",
				"Application argocd/guestbook (testdata/import/argocd-export.yaml document 1): metadata.finalizers: dropped",
				"Application argocd/guestbook (testdata/import/argocd-export.yaml document 1): status: dropped",
				"ApplicationSet argocd/monitoring (testdata/import/argocd-export.yaml document 2): spec.template.spec.project: dropped",
				"Secret argocd/prod-eu-cluster (testdata/import/argocd-export.yaml document 3): stringData.project: dropped: navarch has no AppProjects",
				"Secret argocd/in-cluster (testdata/import/argocd-export.yaml document 4): data.config: dropped: navarch reaches the cluster it runs in",
			},
			errors: []string{
				"AppProject argocd/team-a (testdata/import/argocd-export.yaml document 5): navarch has no AppProjects",
				"Secret argocd/deploy-repo (testdata/import/argocd-export.yaml document 6): only Argo CD cluster Secrets are converted, not repository Secrets",
			},
			wantErr: true,
		},
		{
			name:      "a List from kubectl get, moved to another namespace",
			files:     []string{"testdata/import/list.yaml"},
			namespace: "apps",
			want:      []string{"Application apps/api", "Application apps/web"},
			warnings: []string{
				"Application argocd/api (testdata/import/list.yaml document 1 item 1): spec.project: dropped",
				`Application argocd/api (testdata/import/list.yaml document 1 item 1): status: dropped`,
				`Application argocd/api (testdata/import/list.yaml document 1 item 1): metadata.namespace: "argocd" becomes "apps" (--namespace)`,
				"Application argocd/web (testdata/import/list.yaml document 1 item 2): spec.project: dropped",
				`Application argocd/web (testdata/import/list.yaml document 1 item 2): metadata.namespace: "argocd" becomes "apps" (--namespace)`,
			},
		},
		{
			name:  "nothing that can be converted, next to a file that can",
			files: []string{"testdata/import/unsupported.yaml", "testdata/import/list.yaml"},
			want:  []string{"Application argocd/api", "Application argocd/web"},
			warnings: []string{
				"Application argocd/api (testdata/import/list.yaml document 1 item 1): spec.project",
				"Application argocd/api (testdata/import/list.yaml document 1 item 1): status",
				"Application argocd/web (testdata/import/list.yaml document 1 item 2): spec.project",
			},
			errors: []string{
				"open testdata/import/missing.yaml: no such file",
				"Application argocd/payments (testdata/import/unsupported.yaml document 1): spec.project: AppProjects are not supported",
				"Secret eks (testdata/import/unsupported.yaml document 2): stringData.config.awsAuthConfig: AWS IAM authentication is not supported",
				"Deployment not-argo (testdata/import/unsupported.yaml document 3): not an Argo CD Application, ApplicationSet or cluster Secret",
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
