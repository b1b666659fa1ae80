package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/gitserver"
	"github.com/navarch-io/navarch/internal/localcluster"
)

// result is what one run of the navarch binary printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

// runNavarch runs the binary and returns its output and exit code without failing the test
// on a non-zero exit. $KUBECONFIG is removed from its environment, so that a kubeconfig of
// the machine running the tests never becomes the "live management cluster" of a test; a
// test that wants one passes --kubeconfig.
func runNavarch(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(navarchBinary, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KUBECONFIG=") })
	err := cmd.Run()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("navarch %s: %v", strings.Join(args, " "), err)
		}
		code = exit.ExitCode()
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// mustGenerate runs `navarch generate` and fails the test unless it exits 0.
func mustGenerate(t *testing.T, args ...string) result {
	t.Helper()
	r := runNavarch(t, append([]string{"generate"}, args...)...)
	if r.code != 0 {
		t.Fatalf("navarch generate %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// writeFile writes content to dir/name, creating parent directories, and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// kustomization is a minimal kustomization.yaml for an app directory.
const kustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"

// tableRows splits tabwriter output into rows of whitespace-separated cells, header first.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// appNames returns the names of apps, in order.
func appNames(apps []navarchv1.Application) []string {
	names := make([]string, len(apps))
	for i, a := range apps {
		names[i] = a.Name
	}
	return names
}

func decodeApplicationsJSON(t *testing.T, out string) []navarchv1.Application {
	t.Helper()
	var apps []navarchv1.Application
	if err := json.Unmarshal([]byte(out), &apps); err != nil {
		t.Fatalf("-o json is not a JSON list of Applications: %v\n%s", err, out)
	}
	return apps
}

// seedGuideAppSet is the ApplicationSet of the "GitOps with Argo CD" guide (one Application per
// directory under apps/), unchanged except that REPO is replaced by the test server's repository.
const seedGuideAppSet = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: { name: all-apps, namespace: argocd }
spec:
  generators:
    - git:
        repoURL: REPO
        revision: main
        directories: [{ path: "apps/*" }]
  template:
    metadata: { name: '{{path.basename}}' }
    spec:
      project: default
      source: { repoURL: 'REPO', targetRevision: main, path: '{{path}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{path.basename}}' }
      syncPolicy: { automated: { prune: true, selfHeal: true } }
`

func TestGeneratePreviewsTheSeedGuideAppSetFromARealGitServer(t *testing.T) {
	srv, err := gitserver.Start(gitserver.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	src := t.TempDir()
	for _, app := range []string{"api", "web", "worker"} {
		writeFile(t, src, "apps/"+app+"/kustomization.yaml", kustomization)
	}
	writeFile(t, src, "README.md", "deploy repo\n")
	if _, err := srv.CreateRepo("org/deploy", src); err != nil {
		t.Fatal(err)
	}
	repoURL := srv.RepoURL("org/deploy")

	// The platform engineer copies the guide's ApplicationSet as it is, Argo CD apiVersion
	// and all, and previews what it would generate.
	file := writeFile(t, t.TempDir(), "all-apps.yaml", strings.ReplaceAll(seedGuideAppSet, "REPO", repoURL))
	r := mustGenerate(t, "-f", file, "-o", "json")

	apps := decodeApplicationsJSON(t, r.stdout)
	if got, want := appNames(apps), []string{"api", "web", "worker"}; !slices.Equal(got, want) {
		t.Fatalf("generated Applications %v, want %v\n%s", got, want, r.stdout)
	}
	for _, app := range apps {
		name := app.Name
		if app.APIVersion != "navarch.io/v1alpha1" || app.Kind != "Application" {
			t.Errorf("%s: apiVersion %q kind %q, want navarch.io/v1alpha1 Application", name, app.APIVersion, app.Kind)
		}
		if got, want := app.Spec.Source.Path, "apps/"+name; got != want {
			t.Errorf("%s: source.path %q, want %q", name, got, want)
		}
		if app.Spec.Source.RepoURL != repoURL || app.Spec.Source.TargetRevision != "main" {
			t.Errorf("%s: source %s@%s, want %s@main", name, app.Spec.Source.RepoURL, app.Spec.Source.TargetRevision, repoURL)
		}
		if d := app.Spec.Destination; d.Namespace != name || d.Server != "https://kubernetes.default.svc" {
			t.Errorf("%s: destination %+v, want namespace %s on https://kubernetes.default.svc", name, d, name)
		}
		if sp := app.Spec.SyncPolicy; sp == nil || sp.Automated == nil || !sp.Automated.Prune || !sp.Automated.SelfHeal {
			t.Errorf("%s: syncPolicy %+v, want automated prune and selfHeal", name, sp)
		}
		if app.Namespace != "argocd" || app.Labels[navarchv1.LabelApplicationSet] != "all-apps" {
			t.Errorf("%s: namespace %q labels %v, want namespace argocd and label %s=all-apps", name, app.Namespace, app.Labels, navarchv1.LabelApplicationSet)
		}
	}
	// `project: default` means in navarch what it means in Argo CD: it is kept, without a word.
	for _, app := range apps {
		if app.Spec.Project != "default" {
			t.Errorf("%s: project %q, want default", app.Name, app.Spec.Project)
		}
	}
	if strings.Contains(r.stderr, "spec.template.spec.project") {
		t.Errorf("stderr mentions spec.template.spec.project, which is kept as it is:\n%s", r.stderr)
	}

	// A new app directory is pushed; the next preview picks it up from the server.
	if _, err := srv.Update("org/deploy", "Add billing", func(work string) error {
		dir := filepath.Join(work, "apps", "billing")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	r = mustGenerate(t, "-f", file, "-o", "json")
	apps = decodeApplicationsJSON(t, r.stdout)
	if got, want := appNames(apps), []string{"api", "billing", "web", "worker"}; !slices.Equal(got, want) {
		t.Fatalf("after the push: generated Applications %v, want %v\n%s", got, want, r.stdout)
	}
	if billing := apps[1]; billing.Spec.Source.Path != "apps/billing" || billing.Spec.Destination.Namespace != "billing" {
		t.Errorf("billing: path %q namespace %q, want apps/billing and billing", billing.Spec.Source.Path, billing.Spec.Destination.Namespace)
	}
}

const threeClusters = `apiVersion: navarch.io/v1alpha1
kind: Cluster
metadata:
  name: prod-eu
  labels: { env: prod, region: eu }
spec:
  server: https://prod-eu.example.com
  kubeconfigSecretRef: { namespace: navarch-system, name: prod-eu-kubeconfig }
---
apiVersion: navarch.io/v1alpha1
kind: Cluster
metadata:
  name: prod-us
  labels: { env: prod, region: us }
spec:
  server: https://prod-us.example.com
  kubeconfigSecretRef: { namespace: navarch-system, name: prod-us-kubeconfig }
---
apiVersion: navarch.io/v1alpha1
kind: Cluster
metadata:
  name: dev-1
  labels: { env: dev, region: eu }
spec:
  server: https://dev-1.example.com
  kubeconfigSecretRef: { namespace: navarch-system, name: dev-1-kubeconfig }
`

// appsPerProdCluster deploys every directory under apps/ to every prod cluster; selfHeal is a
// boolean, which only templatePatch can produce.
const appsPerProdCluster = `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: apps-per-prod-cluster, namespace: navarch-system }
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - matrix:
        generators:
          - git:
              repoURL: https://git.example.com/org/deploy.git
              revision: main
              directories: [{ path: "apps/*" }]
          - clusters:
              selector: { matchLabels: { env: prod } }
  template:
    metadata:
      name: '{{ .path.basename }}-{{ .name }}'
      labels: { region: '{{ .metadata.labels.region }}' }
    spec:
      source:
        repoURL: https://git.example.com/org/deploy.git
        targetRevision: main
        path: '{{ .path.path }}'
      destination: { name: '{{ .name }}', namespace: '{{ .path.basename }}' }
  templatePatch: |
    spec:
      syncPolicy:
        automated:
          prune: true
          selfHeal: {{ eq .metadata.labels.env "prod" }}
`

func TestGenerateWithRepoOverrideAndClustersFile(t *testing.T) {
	dir := t.TempDir()
	// A plain directory, not a Git repository: the working tree as it is on disk.
	deploy := filepath.Join(dir, "deploy")
	for _, app := range []string{"api", "web"} {
		writeFile(t, deploy, "apps/"+app+"/kustomization.yaml", kustomization)
	}
	writeFile(t, deploy, "apps/.hidden/kustomization.yaml", kustomization) // never an app
	clusters := writeFile(t, dir, "clusters.yaml", threeClusters)
	appSet := writeFile(t, dir, "appset.yaml", appsPerProdCluster)
	override := "https://git.example.com/org/deploy.git=" + deploy

	table := mustGenerate(t, "-f", appSet, "--clusters", clusters, "--repo-override", override, "-o", "table")
	want := [][]string{
		{"NAME", "CLUSTER", "NAMESPACE", "REPO", "PATH", "REVISION"},
		{"api-prod-eu", "prod-eu", "api", "https://git.example.com/org/deploy.git", "apps/api", "main"},
		{"api-prod-us", "prod-us", "api", "https://git.example.com/org/deploy.git", "apps/api", "main"},
		{"web-prod-eu", "prod-eu", "web", "https://git.example.com/org/deploy.git", "apps/web", "main"},
		{"web-prod-us", "prod-us", "web", "https://git.example.com/org/deploy.git", "apps/web", "main"},
	}
	got := tableRows(table.stdout)
	if len(got) != len(want) {
		t.Fatalf("table has %d rows, want %d:\n%s", len(got), len(want), table.stdout)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("table row %d: %q, want %q", i, got[i], want[i])
		}
	}
	if table.stderr != "" {
		t.Errorf("a native ApplicationSet printed to stderr:\n%s", table.stderr)
	}

	// The uncommitted working tree is what is read: a new directory shows up at once.
	writeFile(t, deploy, "apps/worker/kustomization.yaml", kustomization)

	out := mustGenerate(t, "-f", appSet, "--clusters", clusters, "--repo-override", override, "-o", "yaml").stdout
	dec := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	var names []string
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("-o yaml: %v\n%s", err, out)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var app map[string]any
		if err := yaml.Unmarshal(doc, &app); err != nil {
			t.Fatalf("-o yaml document does not decode: %v\n%s", err, doc)
		}
		meta, _ := app["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		names = append(names, name)
		if app["apiVersion"] != "navarch.io/v1alpha1" || app["kind"] != "Application" {
			t.Errorf("%s: apiVersion %v kind %v", name, app["apiVersion"], app["kind"])
		}
		selfHeal := dig(app, "spec", "syncPolicy", "automated", "selfHeal")
		if b, ok := selfHeal.(bool); !ok || !b {
			t.Errorf("%s: syncPolicy.automated.selfHeal is %#v (%T), want the boolean true", name, selfHeal, selfHeal)
		}
		if prune, ok := dig(app, "spec", "syncPolicy", "automated", "prune").(bool); !ok || !prune {
			t.Errorf("%s: syncPolicy.automated.prune is not the boolean true", name)
		}
		cluster, _ := dig(app, "spec", "destination", "name").(string)
		if region := dig(app, "metadata", "labels", "region"); region != strings.TrimPrefix(cluster, "prod-") {
			t.Errorf("%s: label region=%v, want the region of cluster %q", name, region, cluster)
		}
	}
	wantNames := []string{"api-prod-eu", "api-prod-us", "web-prod-eu", "web-prod-us", "worker-prod-eu", "worker-prod-us"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("-o yaml Applications %v, want %v\n%s", names, wantNames, out)
	}
}

// dig walks nested maps along keys.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func TestGenerateRefusesWhatItCannotHonour(t *testing.T) {
	dir := t.TempDir()

	t.Run("an Argo CD SCM provider navarch does not support, next to a project it keeps", func(t *testing.T) {
		file := writeFile(t, dir, "scm.yaml", `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: { name: every-repo, namespace: argocd }
spec:
  generators:
    - scmProvider:
        gitlab: { group: org }
  template:
    metadata: { name: '{{repository}}' }
    spec:
      project: payments
      source: { repoURL: '{{url}}', targetRevision: main, path: deploy }
      destination: { server: 'https://kubernetes.default.svc', namespace: payments }
`)
		r := runNavarch(t, "generate", "-f", file)
		if r.code != 1 {
			t.Errorf("exit code %d, want 1\nstderr:\n%s", r.code, r.stderr)
		}
		if want := "spec.generators[0].scmProvider.gitlab: the gitlab SCM provider is not supported; only github is"; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
		if strings.Contains(r.stderr, "spec.template.spec.project") {
			t.Errorf("stderr mentions spec.template.spec.project, which navarch keeps:\n%s", r.stderr)
		}
		if strings.TrimSpace(r.stdout) != "" {
			t.Errorf("nothing should be printed for an ApplicationSet that cannot be read, got:\n%s", r.stdout)
		}
	})

	t.Run("a generator's template override with fields navarch cannot honour", func(t *testing.T) {
		// The override's spec is free-form in the CRD, so it needs the same field-by-field check
		// as the main template: a typo there must not be silently ignored, while a project is
		// kept as in the main template.
		file := writeFile(t, dir, "override.yaml", `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: { name: payments, namespace: argocd }
spec:
  generators:
    - list:
        elements: [{ env: prod }]
        template:
          metadata: {}
          spec:
            project: payments
            source: { pth: 'payments/{{env}}' }
  template:
    metadata: { name: 'payments-{{env}}' }
    spec:
      project: default
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: 'payments/{{env}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: payments }
`)
		r := runNavarch(t, "generate", "-f", file)
		if r.code != 1 {
			t.Errorf("exit code %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if want := "spec.generators[0].list.template.spec.source.pth: unknown field"; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
		if strings.Contains(r.stderr, "template.spec.project") {
			t.Errorf("stderr mentions the override's project, which navarch keeps:\n%s", r.stderr)
		}
	})

	t.Run("a typo in a navarch ApplicationSet", func(t *testing.T) {
		file := writeFile(t, dir, "typo.yaml", `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: typo }
spec:
  generators:
    - list:
        elements: [{ app: api }]
  template:
    metadata: { name: '{{app}}' }
    spec:
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, pth: 'apps/{{app}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{app}}' }
`)
		r := runNavarch(t, "generate", "-f", file)
		if r.code != 1 {
			t.Errorf("exit code %d, want 1\nstderr:\n%s", r.code, r.stderr)
		}
		if want := "spec.template.spec.source.pth: unknown field"; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	})

	t.Run("usage errors", func(t *testing.T) {
		file := writeFile(t, dir, "ok.yaml", `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: ok }
spec:
  generators: [{ list: { elements: [{ app: api }] } }]
  template:
    metadata: { name: '{{app}}' }
    spec:
      source: { repoURL: 'https://github.com/org/deploy.git', path: 'apps/{{app}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{app}}' }
`)
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"generate"}, `required flag "--filename" (-f) not set`},
			{[]string{"generate", "-f", file, "-o", "xml"}, `--output must be table, wide, yaml or json, got "xml"`},
			{[]string{"generate", "-f", file, "--repo-override", "https://github.com/org/deploy.git"}, "want URL=DIR"},
			{[]string{"generate", "-f", file, "--no-such-flag"}, "unknown flag: --no-such-flag"},
		} {
			r := runNavarch(t, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("navarch %s: exit %d, want 2 (a usage error) and stderr with %q:\n%s", strings.Join(tc.args, " "), r.code, tc.want, r.stderr)
			}
		}
	})

	t.Run("a typo in a nested matrix", func(t *testing.T) {
		file := writeFile(t, dir, "nested-typo.yaml", `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: nested-typo }
spec:
  generators:
    - matrix:
        generators:
          - list: { elements: [{ app: api }] }
          - matrix:
              generators:
                - list: { elements: [{ env: prod }] }
                - list: { elements: [{ region: eu }] }
              mergeKey: [env]
  template:
    metadata: { name: '{{app}}-{{env}}-{{region}}' }
    spec:
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: 'apps/{{app}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{app}}' }
`)
		r := runNavarch(t, "generate", "-f", file)
		if r.code != 1 {
			t.Errorf("exit code %d, want 1\nstderr:\n%s", r.code, r.stderr)
		}
		if want := "spec.generators[0].matrix.generators[1].matrix.mergeKey: unknown field"; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	})

	t.Run("a goTemplate reading the environment", func(t *testing.T) {
		file := writeFile(t, dir, "env.yaml", `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: leaky }
spec:
  goTemplate: true
  generators:
    - list:
        elements: [{ app: api }]
  template:
    metadata: { name: '{{ .app }}' }
    spec:
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: '{{ env "HOME" }}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{ .app }}' }
`)
		r := runNavarch(t, "generate", "-f", file, "-o", "json")
		if r.code != 1 {
			t.Errorf("exit code %d, want 1\nstderr:\n%s", r.code, r.stderr)
		}
		if want := `spec.template.spec.source.path: function "env" not defined`; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
		if home, _ := os.UserHomeDir(); home != "" && strings.Contains(r.stdout, home) {
			t.Errorf("the home directory leaked into the output:\n%s", r.stdout)
		}
	})

	t.Run("a name generated twice", func(t *testing.T) {
		file := writeFile(t, dir, "dup.yaml", `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: per-env }
spec:
  generators:
    - list:
        elements:
          - { app: api, env: prod }
          - { app: web, env: prod }
          - { app: api, env: staging }
          - { app: worker, env: prod }
  template:
    metadata: { name: '{{app}}' }
    spec:
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: 'apps/{{app}}/{{env}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{app}}' }
`)
		r := runNavarch(t, "generate", "-f", file)
		if r.code != 1 {
			t.Errorf("exit code %d, want 1\nstderr:\n%s", r.code, r.stderr)
		}
		if want := `Application "api": spec.template.metadata.name: "api" is generated by 2 parameter sets`; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
		rows := tableRows(r.stdout)
		var names []string
		for _, row := range rows[1:] {
			names = append(names, row[0])
		}
		if want := []string{"web", "worker"}; !slices.Equal(names, want) {
			t.Errorf("stdout lists %v, want the Applications without a problem %v:\n%s", names, want, r.stdout)
		}
	})
}

// nestedMatrixFast is a matrix whose second child is itself a matrix, and the inner matrix's
// second child uses a parameter of the inner matrix's first child (env). nestedMatrixGo is the
// same ApplicationSet in goTemplate syntax.
const nestedMatrixFast = `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: nested }
spec:
  generators:
    - matrix:
        generators:
          - list: { elements: [{ app: api }] }
          - matrix:
              generators:
                - list: { elements: [{ env: prod }, { env: staging }] }
                - list:
                    elementsYaml: |
                      - slot: '{{env}}-a'
  template:
    metadata: { name: '{{app}}-{{slot}}' }
    spec:
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: 'apps/{{app}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{app}}-{{env}}' }
`

const nestedMatrixGo = `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: nested }
spec:
  goTemplate: true
  generators:
    - matrix:
        generators:
          - list: { elements: [{ app: api }] }
          - matrix:
              generators:
                - list: { elements: [{ env: prod }, { env: staging }] }
                - list:
                    elementsYaml: |
                      - slot: '{{ .env }}-a'
  template:
    metadata: { name: '{{ .app }}-{{ .slot }}' }
    spec:
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: 'apps/{{ .app }}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{ .app }}-{{ .env }}' }
`

// A later child of a matrix may use the parameters of an earlier child, and matrices nest to
// any depth: that holds inside a nested matrix too, in both template modes.
func TestGenerateNestedMatrixChildUsesItsSiblingsParameters(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ mode, doc string }{{"fasttemplate", nestedMatrixFast}, {"goTemplate", nestedMatrixGo}} {
		t.Run(tc.mode, func(t *testing.T) {
			file := writeFile(t, dir, tc.mode+".yaml", tc.doc)
			r := runNavarch(t, "generate", "-f", file)
			if r.code != 0 {
				t.Errorf("exit code %d, want 0\nstderr:\n%s", r.code, r.stderr)
			}
			assertRows(t, tc.mode, r.stdout, [][]string{
				{"NAME", "CLUSTER", "NAMESPACE", "REPO", "PATH", "REVISION"},
				{"api-prod-a", "https://kubernetes.default.svc", "api-prod", "https://github.com/org/deploy.git", "apps/api", "main"},
				{"api-staging-a", "https://kubernetes.default.svc", "api-staging", "https://github.com/org/deploy.git", "apps/api", "main"},
			})
		})
	}
}

// fleetAppSet generates api and web into the namespace apps; the management cluster already
// holds an older api (another path) and legacy, which the ApplicationSet no longer generates.
const fleetAppSet = `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: fleet, namespace: apps }
spec:
  generators:
    - list:
        elements:
          - { app: api }
          - { app: web }
  template:
    metadata: { name: '{{app}}' }
    spec:
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: 'apps/{{app}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{app}}' }
`

// perClusterAppSet deploys one Application per prod Cluster registered in the management cluster.
const perClusterAppSet = `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: monitoring, namespace: apps }
spec:
  generators:
    - clusters:
        selector: { matchLabels: { env: prod } }
        values: { tier: 'gold-{{metadata.labels.region}}' }
  template:
    metadata: { name: 'monitoring-{{nameNormalized}}', labels: { tier: '{{values.tier}}' } }
    spec:
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: monitoring }
      destination: { server: '{{server}}', namespace: monitoring }
`

func TestGenerateDiffAgainstALiveManagementCluster(t *testing.T) {
	cluster := localcluster.StartForTest(t, localcluster.Options{Name: "generate-diff", CRDDirectoryPaths: []string{"../config/crd/bases"}})
	kubeconfig := cluster.KubeconfigPath()
	c := clientFor(t, kubeconfig)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}); err != nil {
		t.Fatal(err)
	}
	existing := func(name, path string) *navarchv1.Application {
		return &navarchv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps",
				Labels: map[string]string{navarchv1.LabelApplicationSet: "fleet"}},
			Spec: navarchv1.ApplicationSpec{
				Source:      navarchv1.ApplicationSource{RepoURL: "https://github.com/org/deploy.git", TargetRevision: "main", Path: path},
				Destination: navarchv1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: name},
			},
		}
	}
	for _, app := range []*navarchv1.Application{
		existing("api", "apps/api-v1"), // still generated, at another path
		existing("legacy", "apps/legacy"),
	} {
		if err := c.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
	}
	// An Application of another ApplicationSet is none of this one's business.
	other := existing("unrelated", "apps/unrelated")
	other.Labels[navarchv1.LabelApplicationSet] = "someone-else"
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	file := writeFile(t, dir, "fleet.yaml", fleetAppSet)
	r := mustGenerate(t, "-f", file, "--diff", "--kubeconfig", kubeconfig)
	want := [][]string{
		{"ACTION", "APPLICATIONSET", "APPLICATION"},
		{"create", "fleet", "web"},
		{"update", "fleet", "api"},
		{"delete", "fleet", "legacy"},
		{"1", "to", "create,", "1", "to", "update,", "1", "to", "delete,", "0", "unchanged"},
	}
	assertRows(t, "--diff", r.stdout, want)
	if !strings.Contains(r.stdout, "\n1 to create, 1 to update, 1 to delete, 0 unchanged\n") {
		t.Errorf("--diff lacks the summary line:\n%s", r.stdout)
	}

	// The user applies what generate printed; the next diff has nothing left to do.
	apps := decodeApplicationsJSON(t, mustGenerate(t, "-f", file, "--kubeconfig", kubeconfig, "-o", "json").stdout)
	for i := range apps {
		app := &apps[i]
		var cur navarchv1.Application
		err := c.Get(ctx, client.ObjectKeyFromObject(app), &cur)
		switch {
		case err == nil:
			cur.Labels, cur.Spec = app.Labels, app.Spec
			err = c.Update(ctx, &cur)
		case apierrors.IsNotFound(err):
			err = c.Create(ctx, app)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, existing("legacy", "")); err != nil {
		t.Fatal(err)
	}
	r = mustGenerate(t, "-f", file, "--diff", "--kubeconfig", kubeconfig)
	assertRows(t, "--diff after applying", r.stdout, [][]string{
		{"ACTION", "APPLICATIONSET", "APPLICATION"},
		{"unchanged", "fleet", "api"},
		{"unchanged", "fleet", "web"},
		{"0", "to", "create,", "0", "to", "update,", "0", "to", "delete,", "2", "unchanged"},
	})

	// Without --clusters, a clusters generator reads the Clusters registered in the
	// management cluster that --kubeconfig names.
	for _, cl := range []struct{ name, env, region string }{
		{"prod-eu", "prod", "eu"}, {"prod-us", "prod", "us"}, {"dev-1", "dev", "eu"},
	} {
		obj := &navarchv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: cl.name, Labels: map[string]string{"env": cl.env, "region": cl.region}},
			Spec: navarchv1.ClusterSpec{
				Server:              "https://" + cl.name + ".example.com",
				KubeconfigSecretRef: &navarchv1.KubeconfigSecretRef{Namespace: "navarch-system", Name: cl.name + "-kubeconfig"},
			},
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	perCluster := writeFile(t, dir, "monitoring.yaml", perClusterAppSet)
	r = mustGenerate(t, "-f", perCluster, "--kubeconfig", kubeconfig, "-o", "wide")
	assertRows(t, "clusters from the live management cluster", r.stdout, [][]string{
		{"NAME", "CLUSTER", "NAMESPACE", "REPO", "PATH", "REVISION", "APPLICATIONSET", "AUTOSYNC"},
		{"monitoring-prod-eu", "https://prod-eu.example.com", "monitoring", "https://github.com/org/deploy.git", "monitoring", "main", "monitoring", "manual"},
		{"monitoring-prod-us", "https://prod-us.example.com", "monitoring", "https://github.com/org/deploy.git", "monitoring", "main", "monitoring", "manual"},
	})
	tiers := decodeApplicationsJSON(t, mustGenerate(t, "-f", perCluster, "--kubeconfig", kubeconfig, "-o", "json").stdout)
	for _, app := range tiers {
		want := "gold-" + strings.TrimPrefix(app.Name, "monitoring-prod-")
		if app.Labels["tier"] != want {
			t.Errorf("%s: label tier=%q, want %q (values templated with the Cluster's labels)", app.Name, app.Labels["tier"], want)
		}
	}

	// Without either, a clusters generator has nothing to read and says what to pass.
	noClusters := runNavarch(t, "generate", "-f", perCluster)
	if noClusters.code != 1 || !strings.Contains(noClusters.stderr, "pass --clusters FILE or --kubeconfig") {
		t.Errorf("generate without clusters: exit %d, stderr:\n%s", noClusters.code, noClusters.stderr)
	}
}

// assertRows compares tabwriter output, cell by cell, with want.
func assertRows(t *testing.T, what, out string, want [][]string) {
	t.Helper()
	got := tableRows(out)
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d:\n%s", what, len(got), len(want), out)
		return
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("%s: row %d is %q, want %q\n%s", what, i, got[i], want[i], out)
		}
	}
}

// matrixValuesAppSet is the ApplicationSet of issue 16: a clusters child after a git child
// whose values use the git child's path and the cluster's own name, with missingkey=error.
const matrixValuesAppSet = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: { name: apps-per-cluster, namespace: argocd }
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - matrix:
        generators:
          - git:
              repoURL: https://git.example.com/org/deploy.git
              revision: main
              directories: [{ path: "apps/*" }]
          - clusters:
              selector: { matchLabels: { env: prod } }
              values: { app: '{{ .path.basename }}', target: '{{ .name }}' }
  template:
    metadata:
      name: '{{ .values.app }}-{{ .values.target }}'
      annotations: { target: '{{ .values.target }}' }
    spec:
      project: default
      source: { repoURL: https://git.example.com/org/deploy.git, targetRevision: main, path: '{{ .path.path }}' }
      destination: { name: '{{ .name }}', namespace: '{{ .values.app }}' }
`

// An Argo CD ApplicationSet whose later matrix child templates its values with both children's
// parameters previews as it runs in Argo CD 3.5, instead of failing on "map has no entry".
func TestGenerateMatrixValuesUseTheEarlierChildsAndTheirOwnParameters(t *testing.T) {
	dir := t.TempDir()
	deploy := filepath.Join(dir, "deploy")
	for _, app := range []string{"api", "web"} {
		writeFile(t, deploy, "apps/"+app+"/kustomization.yaml", kustomization)
	}
	clusters := writeFile(t, dir, "clusters.yaml", threeClusters)
	file := writeFile(t, dir, "appset.yaml", matrixValuesAppSet)
	r := mustGenerate(t, "-f", file, "--clusters", clusters, "--repo-override", "https://git.example.com/org/deploy.git="+deploy, "-o", "json")
	apps := decodeApplicationsJSON(t, r.stdout)
	if got, want := appNames(apps), []string{"api-prod-eu", "api-prod-us", "web-prod-eu", "web-prod-us"}; !slices.Equal(got, want) {
		t.Fatalf("generated Applications %v, want %v\nstderr:\n%s", got, want, r.stderr)
	}
	for _, app := range apps {
		if d := app.Spec.Destination; d.Name != app.Annotations["target"] || !strings.HasPrefix(app.Name, d.Namespace+"-") {
			t.Errorf("%s: destination %+v, annotation target %q: values.target is not the cluster or values.app not the directory",
				app.Name, d, app.Annotations["target"])
		}
	}
}

// projectAppSet prints the clusters generator's project parameter in both template modes.
const projectAppSetFast = `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: per-cluster }
spec:
  generators:
    - clusters: { selector: { matchLabels: { env: dev } } }
  template:
    metadata: { name: 'mon-{{name}}', annotations: { project: 'p-{{project}}' } }
    spec:
      source: { repoURL: https://git.example.com/org/deploy.git, targetRevision: main, path: monitoring }
      destination: { name: '{{name}}', namespace: monitoring }
`

const projectAppSetGo = `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: per-cluster }
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - clusters: { selector: { matchLabels: { env: dev } } }
  template:
    metadata: { name: 'mon-{{ .name }}', annotations: { project: 'p-{{ .project }}' } }
    spec:
      source: { repoURL: https://git.example.com/org/deploy.git, targetRevision: main, path: monitoring }
      destination: { name: '{{ .name }}', namespace: monitoring }
`

// Templates written for Argo CD may use the cluster's project; a Cluster has none, so it is
// empty, in both modes and under missingkey=error.
func TestGenerateClustersParametersIncludeAnEmptyProject(t *testing.T) {
	dir := t.TempDir()
	clusters := writeFile(t, dir, "clusters.yaml", threeClusters)
	for _, tc := range []struct{ mode, doc string }{{"fasttemplate", projectAppSetFast}, {"goTemplate", projectAppSetGo}} {
		t.Run(tc.mode, func(t *testing.T) {
			file := writeFile(t, dir, tc.mode+".yaml", tc.doc)
			r := mustGenerate(t, "-f", file, "--clusters", clusters, "-o", "json")
			apps := decodeApplicationsJSON(t, r.stdout)
			if len(apps) != 1 || apps[0].Name != "mon-dev-1" {
				t.Fatalf("generated %v, want mon-dev-1\nstderr:\n%s", appNames(apps), r.stderr)
			}
			if got := apps[0].Annotations["project"]; got != "p-" {
				t.Errorf("annotation project=%q, want %q: {{project}} is the empty string", got, "p-")
			}
		})
	}
}

// secretTypeAppSets are two Argo CD ApplicationSets selecting "every cluster" the way Argo
// CD's documentation does, at the top level and inside a matrix.
const secretTypeAppSets = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: { name: everywhere, namespace: argocd }
spec:
  generators:
    - clusters:
        selector: { matchLabels: { argocd.argoproj.io/secret-type: cluster } }
  template:
    metadata: { name: 'guestbook-{{name}}' }
    spec:
      project: default
      source: { repoURL: https://git.example.com/org/deploy.git, targetRevision: main, path: guestbook }
      destination: { name: '{{name}}', namespace: guestbook }
---
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: { name: web-in-prod, namespace: argocd }
spec:
  generators:
    - matrix:
        generators:
          - list: { elements: [{ app: web }] }
          - clusters:
              selector:
                matchLabels: { argocd.argoproj.io/secret-type: cluster }
                matchExpressions: [{ key: env, operator: In, values: [prod] }]
  template:
    metadata: { name: '{{app}}-{{name}}' }
    spec:
      project: default
      source: { repoURL: https://git.example.com/org/deploy.git, targetRevision: main, path: '{{app}}' }
      destination: { name: '{{name}}', namespace: '{{app}}' }
`

// Clusters imported from Argo CD lose the argocd.argoproj.io/secret-type label, but selectors
// on it still mean "every registered cluster".
func TestGenerateArgoCDSecretTypeSelectorSelectsEveryCluster(t *testing.T) {
	dir := t.TempDir()
	clusters := writeFile(t, dir, "clusters.yaml", threeClusters)
	file := writeFile(t, dir, "everywhere.yaml", secretTypeAppSets)
	r := mustGenerate(t, "-f", file, "--clusters", clusters)
	assertRows(t, "secret-type selector", r.stdout, [][]string{
		{"NAME", "CLUSTER", "NAMESPACE", "REPO", "PATH", "REVISION"},
		{"guestbook-dev-1", "dev-1", "guestbook", "https://git.example.com/org/deploy.git", "guestbook", "main"},
		{"guestbook-prod-eu", "prod-eu", "guestbook", "https://git.example.com/org/deploy.git", "guestbook", "main"},
		{"guestbook-prod-us", "prod-us", "guestbook", "https://git.example.com/org/deploy.git", "guestbook", "main"},
		{"web-prod-eu", "prod-eu", "web", "https://git.example.com/org/deploy.git", "web", "main"},
		{"web-prod-us", "prod-us", "web", "https://git.example.com/org/deploy.git", "web", "main"},
	})
}

// edgeCasesAppSet renders a git file holding a null, an elementsYaml item with a nested
// object and a `**` directory glob, in fasttemplate mode.
const edgeCasesAppSet = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: { name: edge-cases, namespace: argocd }
spec:
  generators:
    - git:
        repoURL: https://git.example.com/org/deploy.git
        revision: main
        files: [{ path: "teams/*.yaml" }]
    - list:
        elements: [{ team: payments, owner: p, values: { size: small } }]
        elementsYaml: |
          - team: billing
            owner: b
            values: { size: large }
    - git:
        repoURL: https://git.example.com/org/deploy.git
        revision: main
        directories: [{ path: "platform/**" }]
        template:
          metadata: { name: 'platform-{{path.basenameNormalized}}', annotations: { path: '{{path}}' } }
          spec: { source: { path: '{{path}}' }, destination: { namespace: platform } }
  template:
    metadata:
      name: 'team-{{team}}'
      annotations: { owner: '{{owner}}', size: '{{values.size}}' }
    spec:
      project: default
      source: { repoURL: https://git.example.com/org/deploy.git, targetRevision: main, path: 'teams/{{team}}' }
      destination: { server: https://kubernetes.default.svc, namespace: '{{team}}' }
`

// Fasttemplate renders what Argo CD renders: a null in a git file is "<nil>", an elementsYaml
// item is not flattened (its nested values.size is left as written), and "platform/**" lists
// every directory below platform; -o json prints [] when nothing is generated.
func TestGenerateFasttemplateEdgeCasesRenderAsInArgoCD(t *testing.T) {
	dir := t.TempDir()
	deploy := filepath.Join(dir, "deploy")
	writeFile(t, deploy, "teams/search.yaml", "team: search\nowner: null\nvalues: { size: medium }\n")
	writeFile(t, deploy, "platform/ingress/kustomization.yaml", kustomization)
	writeFile(t, deploy, "platform/ingress/overlays/kustomization.yaml", kustomization)
	file := writeFile(t, dir, "edge.yaml", edgeCasesAppSet)
	override := "https://git.example.com/org/deploy.git=" + deploy
	r := mustGenerate(t, "-f", file, "--repo-override", override, "-o", "json")
	apps := decodeApplicationsJSON(t, r.stdout)
	want := []string{"team-search", "team-payments", "team-billing", "platform-ingress", "platform-overlays"}
	if got := appNames(apps); !slices.Equal(got, want) {
		t.Fatalf("generated Applications %v, want %v\nstderr:\n%s", got, want, r.stderr)
	}
	for i, w := range []map[string]string{
		{"owner": "<nil>", "size": "medium"},
		{"owner": "p", "size": "small"},
		{"owner": "b", "size": "{{values.size}}"},
		{"path": "platform/ingress"},
		{"path": "platform/ingress/overlays"},
	} {
		for k, v := range w {
			if got := apps[i].Annotations[k]; got != v {
				t.Errorf("%s: annotation %s=%q, want %q", apps[i].Name, k, got, v)
			}
		}
	}

	// An ApplicationSet generating nothing prints an empty JSON list, not null.
	none := writeFile(t, dir, "none.yaml", `apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: { name: none }
spec:
  generators: [{ list: { elements: [] } }]
  template:
    metadata: { name: '{{app}}' }
    spec:
      source: { repoURL: https://git.example.com/org/deploy.git, targetRevision: main, path: '{{app}}' }
      destination: { server: https://kubernetes.default.svc, namespace: '{{app}}' }
`)
	if out := strings.TrimSpace(mustGenerate(t, "-f", none, "-o", "json").stdout); out != "[]" {
		t.Errorf("-o json with nothing generated printed %q, want []", out)
	}
}

// Argo CD's plugin generator and preservedFields are read, not refused: the preview renders
// what it can and says that a plugin's parameters come only from the controller, naming the
// field; an ApplicationSet with preservedFields and a templated project previews as usual.
func TestGenerateReadsPluginGeneratorsAndPreservedFields(t *testing.T) {
	dir := t.TempDir()
	plugin := writeFile(t, dir, "plugin.yaml", `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: { name: from-plugin, namespace: argocd }
spec:
  generators:
    - plugin:
        configMapRef: { name: my-plugin }
        input: { parameters: { team: payments } }
        requeueAfterSeconds: 60
  template:
    metadata: { name: '{{name}}' }
    spec:
      project: payments
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: '{{path}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: payments }
`)
	r := runNavarch(t, "generate", "-f", plugin)
	if r.code != 1 {
		t.Errorf("exit code %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if want := "spec.generators[0].plugin: plugin generators run only in the controller"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}

	preserved := writeFile(t, dir, "preserved.yaml", `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: { name: teams, namespace: argocd }
spec:
  goTemplate: true
  preservedFields: { annotations: [notes.example.com/owner], labels: [cost-center] }
  generators:
    - list: { elements: [{ team: payments }, { team: search }] }
  template:
    metadata: { name: '{{.team}}' }
    spec:
      project: '{{.team}}'
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: 'teams/{{.team}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{.team}}' }
`)
	r = mustGenerate(t, "-f", preserved, "-o", "json")
	apps := decodeApplicationsJSON(t, r.stdout)
	if got := appNames(apps); strings.Join(got, ",") != "payments,search" {
		t.Fatalf("generated %v", got)
	}
	for _, app := range apps {
		if app.Spec.Project != app.Name {
			t.Errorf("%s: project %q, want the templated %q", app.Name, app.Spec.Project, app.Name)
		}
	}
	if strings.Contains(r.stderr, "preservedFields") {
		t.Errorf("preservedFields should be read without a warning:\n%s", r.stderr)
	}
}
