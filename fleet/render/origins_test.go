package render

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// The origins that buildMetadata asks for name remote bases and Helm charts as kustomize
// does, never the paths kustomize sees them at.
func TestRenderOriginAnnotations(t *testing.T) {
	const repoURL = "https://github.com/org/base.git"
	remotes := newRemoteRepos(map[gitKey]fs.FS{{repoURL, "v1"}: fstest.MapFS{
		"web/kustomization.yaml": file("resources: [deploy.yaml]\nhelmCharts:\n- {name: remote, repo: 'https://charts.example.com'}\nlabels:\n- pairs: {a: b}\n"),
		"web/deploy.yaml":        file(deployment),
	}})
	repo := fstest.MapFS{
		"envs/prod/kustomization.yaml":  file("buildMetadata: [originAnnotations, transformerAnnotations]\nresources: ['github.com/org/base//web?ref=v1', local]\n"),
		"envs/prod/local/Kustomization": file("helmCharts:\n- {name: here, repo: 'https://charts.example.com'}\n"),
	}
	objs, err := Render(context.Background(), repo, navarchv1.ApplicationSource{Path: "envs/prod"}, Options{Remote: remotes.fetch, Helm: &recordingHelm{}})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	helmGenerator := "configuredBy:\n  apiVersion: builtin\n  kind: HelmChartInflationGenerator\n"
	labels := "- repo: " + repoURL + "\n  ref: v1\n  configuredIn: web/kustomization.yaml\n  configuredBy:\n    apiVersion: builtin\n    kind: LabelTransformer\n"
	for _, tt := range []struct {
		kind, name             string
		origin, transformation string
	}{
		{"Deployment", "web", "path: web/deploy.yaml\nrepo: " + repoURL + "\nref: v1\n", labels + labels},
		{"ConfigMap", "remote-remote", "repo: " + repoURL + "\nref: v1\nconfiguredIn: web/kustomization.yaml\n" + helmGenerator, labels + labels},
		{"ConfigMap", "here-here", "configuredIn: local/Kustomization\n" + helmGenerator, ""},
	} {
		obj := findObject(objs, tt.kind, tt.name)
		if obj == nil {
			t.Errorf("no %s %s in %q", tt.kind, tt.name, ids(objs))
			continue
		}
		if got := obj.GetAnnotations()[originAnnotation]; got != tt.origin {
			t.Errorf("%s %s origin:\n got %q\nwant %q", tt.kind, tt.name, got, tt.origin)
		}
		if got := obj.GetAnnotations()[transformationsAnnotation]; got != tt.transformation {
			t.Errorf("%s %s transformations:\n got %q\nwant %q", tt.kind, tt.name, got, tt.transformation)
		}
	}
}
