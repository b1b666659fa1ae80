package render

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
)

// kustomize fetches remote content in two ways, neither of which takes a file system, so
// neither can be switched off through snapshotFS: it clones Git repositories by running git for
// bases, resources and components that look like Git URLs, and it downloads files with HTTP for
// any path that is an http(s) URL. The checks here refuse such references in every
// kustomization, and in every configuration of a builtin plugin that names files, before
// kustomize reads them. They mirror kustomize's own tests (loader.IsRemoteFile and
// git.NewRepoSpecFromURL) and err on the side of refusing.

// scpUser matches the "user@" that starts an scp-like Git URL (git@github.com:org/repo).
var scpUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// isHTTPURL reports whether kustomize would download p with HTTP.
func isHTTPURL(p string) bool {
	u, err := url.Parse(p)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https")
}

// isRemote reports whether kustomize could clone or download p, a base, resource or
// component.
func isRemote(p string) bool {
	if isHTTPURL(p) {
		return true
	}
	s := strings.ToLower(p)
	s = strings.TrimPrefix(s, "git::")
	return strings.Contains(s, "://") ||
		scpUser.MatchString(s) ||
		strings.HasPrefix(s, "github.com/") || strings.HasPrefix(s, "github.com:")
}

// errNeedsExclusive stops a kustomize run that turns out to use a custom OpenAPI schema, so
// that it can be run again alone; see renderKustomization.
var errNeedsExclusive = errors.New("kustomization sets openapi")

// checkKustomization checks a kustomization file before kustomize reads it. It returns an
// error for remote references and Helm charts, and errNeedsExclusive when the kustomization
// sets openapi and exclusive is false. It decodes the file as kustomize does; a file kustomize
// cannot decode is left for kustomize to report.
func checkKustomization(data []byte, exclusive bool) error {
	k, ok := decodeKustomization(data)
	if !ok {
		return nil // kustomize reports it, with its own message
	}
	if len(k.HelmCharts) > 0 {
		return fmt.Errorf("helmCharts: %w", ErrHelmChartsNotSupported)
	}
	if len(k.HelmChartInflationGenerator) > 0 {
		return fmt.Errorf("helmChartInflationGenerator: %w", ErrHelmChartsNotSupported)
	}

	// Fields that kustomize may clone: bases, resources and components.
	for _, f := range []struct {
		field string
		refs  []string
	}{
		{"resources", k.Resources},
		{"bases", k.Bases}, //nolint:staticcheck // deprecated, but kustomize still reads it
		{"components", k.Components},
	} {
		for i, ref := range f.refs {
			if isRemote(ref) {
				return remoteError(fmt.Sprintf("%s[%d]", f.field, i), ref)
			}
		}
	}
	// Entries of generators, transformers and validators are inline plugin configurations, or
	// else paths that kustomize treats as resources.
	for _, f := range []struct {
		field string
		refs  []string
	}{
		{"generators", k.Generators},
		{"transformers", k.Transformers},
		{"validators", k.Validators},
	} {
		for i, ref := range f.refs {
			field := fmt.Sprintf("%s[%d]", f.field, i)
			if !isInlineConfig(ref) {
				if isRemote(ref) {
					return remoteError(field, ref)
				}
				continue
			}
			if err := checkPluginConfigs([]byte(ref)); err != nil {
				return fmt.Errorf("%s: %w", field, err)
			}
		}
	}

	// Fields that kustomize may download.
	var files []fileRef
	add := func(field string, paths ...string) {
		for _, p := range paths {
			files = append(files, fileRef{field, p})
		}
	}
	add("openapi.path", k.OpenAPI["path"])
	add("crds", k.Crds...)
	add("configurations", k.Configurations...)
	for _, p := range k.PatchesStrategicMerge { //nolint:staticcheck // deprecated, but kustomize still reads it
		add("patchesStrategicMerge", string(p))
	}
	for i, p := range k.Patches {
		add(fmt.Sprintf("patches[%d].path", i), p.Path)
	}
	for i, p := range k.PatchesJson6902 { //nolint:staticcheck // deprecated, but kustomize still reads it
		add(fmt.Sprintf("patchesJson6902[%d].path", i), p.Path)
	}
	for i, r := range k.Replacements {
		add(fmt.Sprintf("replacements[%d].path", i), r.Path)
	}
	for i, g := range k.ConfigMapGenerator {
		addKV(add, fmt.Sprintf("configMapGenerator[%d]", i), g.KvPairSources)
	}
	for i, g := range k.SecretGenerator {
		addKV(add, fmt.Sprintf("secretGenerator[%d]", i), g.KvPairSources)
	}
	for _, f := range files {
		if isHTTPURL(f.path) {
			return remoteError(f.field, f.path)
		}
	}

	if len(k.OpenAPI) > 0 && !exclusive {
		return errNeedsExclusive
	}
	return nil
}

// fileRef is a file named by a field of a kustomization.
type fileRef struct{ field, path string }

// decodeKustomization decodes a kustomization file as kustomize does.
func decodeKustomization(data []byte) (*types.Kustomization, bool) {
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil, false
	}
	return &k, true
}

// isInlineConfig reports whether kustomize takes s, an entry of generators, transformers or
// validators, for inline configurations rather than a path. It asks kustomize's own parser.
func isInlineConfig(s string) bool {
	_, err := resmap.NewFactory(provider.NewDepProvider().GetResourceFactory()).NewResMapFromBytes([]byte(s))
	return err == nil
}

// addKV adds the files of a ConfigMap or Secret generator.
func addKV(add func(string, ...string), field string, kv types.KvPairSources) {
	add(field+".files", fileSourcePaths(kv.FileSources)...)
	add(field+".envs", kv.EnvSources...)
	if kv.EnvSource != "" {
		add(field+".env", kv.EnvSource)
	}
}

// fileSourcePaths returns the paths of generator "files" entries, which are "path" or
// "key=path".
func fileSourcePaths(sources []string) []string {
	paths := make([]string, len(sources))
	for i, s := range sources {
		paths[i] = s[strings.LastIndex(s, "=")+1:]
	}
	return paths
}

// loadingPlugins are the builtin plugins whose configuration names files that kustomize loads.
var loadingPlugins = map[string]bool{
	"PatchTransformer":               true,
	"PatchJson6902Transformer":       true,
	"PatchStrategicMergeTransformer": true,
	"ReplacementTransformer":         true,
	"ValueAddTransformer":            true,
}

// checkPluginConfigs checks the builtin plugin configurations (objects of apiVersion
// "builtin") among the YAML documents of data, which may be any file kustomize reads: it
// refuses those that would download a file or inflate a Helm chart. Documents that do not
// parse are left for kustomize to report.
func checkPluginConfigs(data []byte) error {
	if !strings.Contains(string(data), "builtin") {
		return nil // fast path for ordinary manifests
	}
	for _, doc := range splitDocuments(data) {
		j, err := yamlToJSON(doc.text)
		if err != nil {
			continue
		}
		v, err := decodeJSON(j)
		if err != nil {
			continue
		}
		if err := checkPluginConfig(v); err != nil {
			return err
		}
	}
	return nil
}

func checkPluginConfig(v any) error {
	m, ok := v.(map[string]any)
	if !ok || m["apiVersion"] != "builtin" {
		return nil
	}
	kind, _ := m["kind"].(string)
	switch {
	case kind == "HelmChartInflationGenerator":
		return fmt.Errorf("%s: %w", kind, ErrHelmChartsNotSupported)
	case kind == "ConfigMapGenerator" || kind == "SecretGenerator":
		var paths []string
		for _, key := range []string{"files", "envs", "env"} {
			paths = append(paths, stringValues(m[key])...)
		}
		for _, p := range paths {
			if p = p[strings.LastIndex(p, "=")+1:]; isHTTPURL(p) {
				return remoteError(kind, p)
			}
		}
	case loadingPlugins[kind]:
		var err error
		walkStrings(m, func(s string) {
			if err == nil && !strings.Contains(s, "\n") && isHTTPURL(s) {
				err = remoteError(kind, s)
			}
		})
		return err
	}
	return nil
}

// stringValues returns v if it is a string, or its strings if it is an array.
func stringValues(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// walkStrings calls fn for every string in v.
func walkStrings(v any, fn func(string)) {
	switch v := v.(type) {
	case string:
		fn(v)
	case map[string]any:
		for _, e := range v {
			walkStrings(e, fn)
		}
	case []any:
		for _, e := range v {
			walkStrings(e, fn)
		}
	}
}

func remoteError(field, ref string) error {
	return fmt.Errorf("%s %q: %w", field, ref, ErrRemoteNotSupported)
}
