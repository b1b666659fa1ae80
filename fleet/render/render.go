package render

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// kustomizationNames are the file names that make a directory a kustomization, in kustomize's
// order.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

func isKustomizationName(name string) bool { return slices.Contains(kustomizationNames, name) }

// Options give Render what a source needs beyond its own repository. The zero value renders
// plain manifests and kustomizations without remote references; Helm charts and remote
// kustomize bases are then refused.
type Options struct {
	// Remote returns the snapshot of the Git repository at repoURL at ref (a branch, tag or
	// commit; empty means HEAD), for kustomize bases, resources and components that name a
	// remote repository. nil refuses them with ErrRemoteNotSupported.
	Remote func(ctx context.Context, repoURL, ref string) (fs.FS, error)
	// Helm renders Helm charts: a chart directory of the repository, and the helmCharts of
	// kustomizations. nil refuses them with ErrHelmNotSupported (ErrHelmChartsNotSupported
	// for helmCharts).
	Helm HelmRenderer
	// ReleaseName is the Helm release name when spec.source.helm.releaseName is empty: the
	// Application's name.
	ReleaseName string
	// Namespace is the destination namespace: the release namespace of Helm charts unless
	// spec.source.helm.namespace says otherwise.
	Namespace string
	// Capabilities describe the destination cluster to Helm templates.
	Capabilities Capabilities
	// Refs are the snapshots of the Application's other sources by their ref name, for
	// value files named "$ref/path".
	Refs map[string]fs.FS
}

// Capabilities describe the destination cluster, as Helm's .Capabilities.
type Capabilities struct {
	// KubeVersion is the cluster's version, such as "v1.37.2". Empty means Helm's default.
	KubeVersion string
	// APIVersions are the cluster's group/versions ("apps/v1") and group/version/kinds
	// ("apps/v1/Deployment").
	APIVersions []string
}

// HelmChart is a chart to render: a directory of a snapshot, or a chart of a Helm repository
// or OCI registry.
type HelmChart struct {
	// FS and Dir locate a chart directory (holding Chart.yaml) in a snapshot.
	FS  fs.FS
	Dir string
	// RepoURL, Name and Version locate a chart in a Helm repository (http(s)://…) or an OCI
	// registry (oci://host/path). Version is an exact version or a semver constraint; empty
	// means the latest stable version.
	RepoURL string
	Name    string
	Version string
	// Source describes the chart in errors: "charts/web" or "https://charts.example.com web 1.2.3".
	Source string
}

// HelmRequest is one chart rendering.
type HelmRequest struct {
	Chart HelmChart
	// Options are spec.source.helm; nil means none.
	Options *navarchv1.ApplicationSourceHelm
	// ReleaseName and Namespace are the release's, defaults already applied.
	ReleaseName string
	Namespace   string
	// Capabilities describe the destination cluster.
	Capabilities Capabilities
	// Refs are the other sources' snapshots, for "$ref/path" value files.
	Refs map[string]fs.FS
	// IncludeCRDs renders the chart's crds/ directory (false for kustomize helmCharts
	// without includeCRDs).
	IncludeCRDs bool
}

// HelmRenderer renders Helm charts. Package fleet/helm implements it.
type HelmRenderer interface {
	RenderChart(ctx context.Context, req HelmRequest) ([]*unstructured.Unstructured, error)
}

// HelmRequestFor is the rendering of chart as src asks for it: the release name and namespace
// of spec.source.helm, else of opts, and a chart's CRDs unless skipCrds.
func HelmRequestFor(src navarchv1.ApplicationSource, opts Options, chart HelmChart) HelmRequest {
	req := HelmRequest{
		Chart:        chart,
		Options:      src.Helm,
		ReleaseName:  opts.ReleaseName,
		Namespace:    opts.Namespace,
		Capabilities: opts.Capabilities,
		Refs:         opts.Refs,
		IncludeCRDs:  true,
	}
	if h := src.Helm; h != nil {
		req.ReleaseName = cmp.Or(h.ReleaseName, req.ReleaseName)
		req.Namespace = cmp.Or(h.Namespace, req.Namespace)
		req.IncludeCRDs = !h.SkipCrds
	}
	return req
}

// Render renders src.Path of repo. Objects come back in a stable order (file order for
// directories, kustomize's output order for kustomizations, Helm's install order for charts).
//
// repo is the snapshot of the repository, rooted at its root. src.RepoURL and
// src.TargetRevision are not used: the caller has already resolved them to repo. Errors in a
// file are *Error values naming it; see the package documentation for the others.
func Render(ctx context.Context, repo fs.FS, src navarchv1.ApplicationSource, opts Options) ([]*unstructured.Unstructured, error) {
	if repo == nil {
		return nil, errors.New("no repository snapshot")
	}
	dir, err := cleanPath(src.Path)
	if err != nil {
		return nil, err
	}
	fi, err := fs.Stat(repo, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()):
		return nil, fmt.Errorf("path %q: %w", src.Path, ErrPathNotFound)
	case err != nil:
		return nil, fmt.Errorf("path %q: %w", src.Path, err)
	}

	if src.Helm != nil || isFile(repo, joinPath(dir, "Chart.yaml")) {
		if opts.Helm == nil {
			return nil, &Error{File: dir, Err: ErrHelmNotSupported}
		}
		return opts.Helm.RenderChart(ctx, HelmRequestFor(src, opts, HelmChart{FS: repo, Dir: dir, Source: dir}))
	}
	if kustomization := findKustomization(repo, dir); kustomization != "" {
		return renderKustomization(ctx, repo, dir, src.Kustomize, opts)
	}
	if !isZeroKustomize(src.Kustomize) {
		return nil, &Error{File: dir, Err: errors.New(
			"spec.source.kustomize is set but the directory holds no kustomization.yaml, kustomization.yml or Kustomization")}
	}
	return renderDirectory(repo, dir, src.Directory)
}

// cleanPath turns the source path into an fs.FS path: "" and "." are the root; the path must
// stay inside the repository.
func cleanPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q: must be relative to the repository root", p)
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %q: must stay inside the repository", p)
	}
	if !fs.ValidPath(clean) {
		return "", fmt.Errorf("path %q: %w", p, ErrPathNotFound)
	}
	return clean, nil
}

// findKustomization returns the path of the kustomization file of dir, or "".
func findKustomization(repo fs.FS, dir string) string {
	for _, name := range kustomizationNames {
		if p := joinPath(dir, name); isFile(repo, p) {
			return p
		}
	}
	return ""
}

func isFile(repo fs.FS, name string) bool {
	fi, err := fs.Stat(repo, name)
	return err == nil && !fi.IsDir()
}

func isZeroKustomize(k *navarchv1.ApplicationSourceKustomize) bool {
	return k == nil || (k.NamePrefix == "" && k.NameSuffix == "" && k.Namespace == "" &&
		len(k.Images) == 0 && len(k.CommonLabels) == 0 && len(k.CommonAnnotations) == 0 &&
		len(k.Replicas) == 0)
}
