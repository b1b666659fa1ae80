package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// An ApplicationSet whose template or generator names a repository URL with a password
// generates Applications the API server refuses; the preview must still not show it.
func TestGenerateOutputsRedactUserInfo(t *testing.T) {
	const secret = "hunter2"
	app := &navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "apps"},
		Spec: navarchv1.ApplicationSpec{
			Sources: []navarchv1.ApplicationSource{
				{RepoURL: "https://alice:" + secret + "@git.example/r.git", Path: "apps"},
				{RepoURL: "ssh://git:" + secret + "@git.example/values.git", Ref: "values"},
			},
			Destination: navarchv1.ApplicationDestination{Name: "prod", Namespace: "api"},
		},
	}
	single := app.DeepCopy()
	single.Name, single.Spec.Sources = "web", nil
	single.Spec.Source = navarchv1.ApplicationSource{RepoURL: "http://bot:" + secret + "@git.example/w.git", Path: "web"}
	before := app.DeepCopy()

	for _, format := range []string{"table", "wide", "json", "yaml"} {
		var out bytes.Buffer
		if err := printApplications(&out, []*navarchv1.Application{app, single}, format); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), secret) || strings.Contains(out.String(), "alice") {
			t.Errorf("-o %s shows the user info:\n%s", format, out.String())
		}
		for _, want := range []string{"https://git.example/r.git", "http://git.example/w.git"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("-o %s lost the URL %s:\n%s", format, want, out.String())
			}
		}
		// The SSH user name is no secret, and the Application needs it.
		if (format == "json" || format == "yaml") && !strings.Contains(out.String(), "ssh://git@git.example/values.git") {
			t.Errorf("-o %s lost the SSH user name:\n%s", format, out.String())
		}
	}
	if app.Spec.Sources[0].RepoURL != before.Spec.Sources[0].RepoURL {
		t.Errorf("printing changed the Application: repoURL %q, was %q", app.Spec.Sources[0].RepoURL, before.Spec.Sources[0].RepoURL)
	}
}

// An Argo CD Application may hold its credentials in repoURL; navarch refuses such a URL, so
// import drops the user info, says so, and shows the password nowhere.
func TestImportRedactsUserInfo(t *testing.T) {
	const secret = "hunter2"
	file := filepath.Join(t.TempDir(), "argocd.yaml")
	input := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: api, namespace: argocd}
spec:
  project: default
  source: {repoURL: "https://alice:` + secret + `@git.example/r.git", path: apps, targetRevision: main}
  destination: {name: prod, namespace: api}
---
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: envs, namespace: argocd}
spec:
  generators:
  - git:
      repoURL: "https://bot:` + secret + `@git.example/envs.git"
      revision: main
      directories: [{path: envs/*}]
  template:
    metadata: {name: "{{.path.basename}}"}
    spec:
      project: default
      sources:
      - {repoURL: "ssh://git:` + secret + `@git.example/envs.git", path: "{{.path.path}}", targetRevision: main}
      destination: {name: prod, namespace: "{{.path.basename}}"}
---
apiVersion: v1
kind: Secret
metadata: {name: broken, namespace: argocd, labels: {argocd.argoproj.io/secret-type: repository}}
stringData: {url: "https://carol:` + secret + `@git.example/x.git", password: pw}
`
	if err := os.WriteFile(file, []byte(input), 0o600); err != nil {
		t.Fatal(err)
	}
	o := &importOptions{files: []string{file}, systemNamespace: "navarch-system"}
	var stdout, stderr bytes.Buffer
	_ = o.run(&stdout, &stderr)
	for name, out := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
		if strings.Contains(out, secret) || strings.Contains(out, "alice") {
			t.Errorf("%s shows the user info:\n%s", name, out)
		}
	}
	for _, want := range []string{"repoURL: https://git.example/r.git", "repoURL: https://git.example/envs.git", "repoURL: ssh://git@git.example/envs.git"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, want := range []string{
		"spec.source.repoURL: credentials removed: navarch refuses them in a URL; keep them in a repository Secret",
		"spec.generators[0].git.repoURL: credentials removed",
		"spec.template.spec.sources[0].repoURL: credentials removed",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks the warning %q:\n%s", want, stderr.String())
		}
	}
}
