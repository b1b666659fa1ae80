package render

import (
	"path"
	"regexp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

// Annotations that a kustomization's buildMetadata asks kustomize for: where an object, and
// the transformers that changed it, were configured.
const (
	originAnnotation          = "config.kubernetes.io/origin"
	transformationsAnnotation = "alpha.config.kubernetes.io/transformations"
)

var (
	// remoteOrigin is a path, relative to the kustomization kustomize built, into a remote
	// base's snapshot: the snapshot's id, and the path in the repository.
	remoteOrigin = regexp.MustCompile(`^(?:\.\./)*` + remoteRoot[1:] + `/([0-9a-f]{16})(?:/(.*))?$`)
	// helmOrigin is the path of a file of rendered charts, joined to the path of the
	// kustomization that uses it.
	helmOrigin = regexp.MustCompile(`^(?:(.*)/)?` + helmRoot[1:] + `/[0-9a-f]{16}\.yaml$`)
)

// fixOrigins rewrites the origins in the buildMetadata annotations of obj as kustomize
// writes them for remote bases and Helm charts: a repository, a ref and a path in it rather
// than a path to remoteRoot, and the kustomization that inflated a chart rather than a file
// under helmRoot. Annotations it cannot read are left alone.
func (b *kustomizeBuild) fixOrigins(obj *unstructured.Unstructured) {
	annotations := obj.GetAnnotations()
	changed := false
	if s, ok := annotations[originAnnotation]; ok {
		var o resource.Origin
		if yaml.Unmarshal([]byte(s), &o) == nil && b.fixOrigin(&o) {
			if out, err := o.String(); err == nil {
				annotations[originAnnotation], changed = out, true
			}
		}
	}
	if s, ok := annotations[transformationsAnnotation]; ok {
		var list resource.Transformations
		if yaml.Unmarshal([]byte(s), &list) == nil {
			fixed := false
			for _, o := range list {
				fixed = o != nil && b.fixOrigin(o) || fixed
			}
			if out, err := list.String(); fixed && err == nil {
				annotations[transformationsAnnotation], changed = out, true
			}
		}
	}
	if changed {
		obj.SetAnnotations(annotations)
	}
}

// fixOrigin fixes o in place, and reports whether it changed.
func (b *kustomizeBuild) fixOrigin(o *resource.Origin) bool {
	changed := false
	if m := helmOrigin.FindStringSubmatch(o.Path); m != nil {
		o.ConfiguredIn = path.Join(m[1], "kustomization.yaml")
		if name := b.chartConfiguredIn(o.Path); name != "" {
			o.ConfiguredIn = path.Join(m[1], name)
		}
		o.ConfiguredBy = kyaml.ResourceIdentifier{TypeMeta: kyaml.TypeMeta{APIVersion: "builtin", Kind: "HelmChartInflationGenerator"}}
		o.Path, changed = "", true
	}
	for _, p := range []*string{&o.Path, &o.ConfiguredIn} {
		m := remoteOrigin.FindStringSubmatch(*p)
		if m == nil {
			continue
		}
		if r, ok := b.byID[m[1]]; ok {
			o.Repo, o.Ref, *p, changed = r.repoURL, r.ref, m[2], true
		}
	}
	return changed
}

// chartConfiguredIn returns the file name of the kustomization that first used the rendered
// charts at p (which ends in their file's name under helmRoot).
func (b *kustomizeBuild) chartConfiguredIn(p string) string {
	for _, c := range b.charts {
		if path.Base(c.file) == path.Base(p) {
			return c.configuredIn
		}
	}
	return ""
}
