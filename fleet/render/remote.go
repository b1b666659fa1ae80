package render

import (
	"errors"
	"fmt"
	"net/url"
	"path"
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
// git.NewRepoSpecFromURL) and err on the side of refusing. With Options.Remote, Git
// references are allowed: kustomize.go fetches them and rewrites them into local paths, so
// kustomize still never sees one.

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

// policy says what a kustomization, or a file that kustomize reads, may use.
type policy struct {
	// remote allows remote Git bases (Options.Remote is set).
	remote bool
	// helm allows helmCharts (Options.Helm is set).
	helm bool
	// exclusive says whether the run holds openAPILock alone.
	exclusive bool
	// within is set for the files of a remote repository: the repository's root, as kustomize
	// sees it. Their paths must stay inside it. dir is the directory that paths are relative
	// to, or "" when it is not known (a file of plugin configurations): paths must then not
	// go up at all, as kustomize's LoadRestrictionsRootOnly for remote bases.
	within, dir string
}

// contain checks that ref, a path that field of a file of a remote repository names, stays in
// the repository.
func (p policy) contain(field, ref string) error {
	if p.within == "" || ref == "" {
		return nil
	}
	var inside bool
	switch clean := path.Clean(ref); {
	case path.IsAbs(ref):
	case p.dir == "":
		inside = clean != ".." && !strings.HasPrefix(clean, "../")
	default:
		abs := path.Join(p.dir, ref)
		inside = abs == p.within || strings.HasPrefix(abs, p.within+"/")
	}
	if !inside {
		return fmt.Errorf("%s %q: %w", field, ref, errEscapes)
	}
	return nil
}

// errEscapes refuses a path of a remote repository that leads out of it.
var errEscapes = errors.New("paths of a remote base must stay inside its repository")

// checkKustomization checks a decoded kustomization file before kustomize reads it. It returns
// an error for remote references and Helm charts that p does not allow, for remote files, for
// paths that leave a remote repository, and errNeedsExclusive when the kustomization sets
// openapi and the run is not exclusive.
func checkKustomization(k *types.Kustomization, p policy) error {
	if len(k.HelmCharts) > 0 && !p.helm {
		return fmt.Errorf("helmCharts: %w", ErrHelmChartsNotSupported)
	}
	if len(k.HelmChartInflationGenerator) > 0 && !p.helm {
		return fmt.Errorf("helmChartInflationGenerator: %w", ErrHelmChartsNotSupported)
	}

	// Fields that kustomize may clone: bases, resources and components.
	for _, f := range baseFields(k) {
		for i, ref := range f.refs {
			field := fmt.Sprintf("%s[%d]", f.name, i)
			if f.pluginConfigs && isInlineConfig(ref) {
				// Entries of generators, transformers and validators are inline plugin
				// configurations, or else paths that kustomize treats as resources.
				if err := checkPluginConfigs([]byte(ref), p); err != nil {
					return fmt.Errorf("%s: %w", field, err)
				}
				continue
			}
			if f.pluginConfigs && p.remote && isRemote(ref) {
				// The plugin configurations of a remote directory could name any file,
				// once transformed by its kustomization.
				return fmt.Errorf("%s %q: %w", field, ref, refusedRemote(errRemotePlugins))
			}
			if err := checkBase(field, ref, p); err != nil {
				return err
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
	for i, c := range k.HelmCharts {
		add(fmt.Sprintf("helmCharts[%d].valuesFile", i), c.ValuesFile)
		add(fmt.Sprintf("helmCharts[%d].additionalValuesFiles", i), c.AdditionalValuesFiles...)
	}
	for i, c := range k.HelmChartInflationGenerator {
		add(fmt.Sprintf("helmChartInflationGenerator[%d].values", i), c.Values)
		add(fmt.Sprintf("helmChartInflationGenerator[%d].chartHome", i), c.ChartHome)
	}
	if k.HelmGlobals != nil {
		add("helmGlobals.chartHome", k.HelmGlobals.ChartHome)
	}
	for _, f := range files {
		if isHTTPURL(f.path) {
			return remoteFileError(f.field, f.path, p)
		}
		if err := p.contain(f.field, f.path); err != nil {
			return err
		}
	}

	if len(k.OpenAPI) > 0 && !p.exclusive {
		return errNeedsExclusive
	}
	return nil
}

// baseField is a field of a kustomization whose entries kustomize may load as bases.
type baseField struct {
	name string
	refs []string
	// pluginConfigs says whether entries may also be inline plugin configurations.
	pluginConfigs bool
}

// baseFields returns the fields of k that kustomize may load as bases, in kustomize's order:
// resources (and bases, which kustomize appends to them), components, then the plugin
// fields.
func baseFields(k *types.Kustomization) []baseField {
	return []baseField{
		{"resources", k.Resources, false},
		{"bases", k.Bases, false}, //nolint:staticcheck // deprecated, but kustomize still reads it
		{"components", k.Components, false},
		{"generators", k.Generators, true},
		{"transformers", k.Transformers, true},
		{"validators", k.Validators, true},
	}
}

// checkBase checks ref, an entry of field that kustomize may load as a base.
func checkBase(field, ref string, p policy) error {
	if !isRemote(ref) {
		return p.contain(field, ref)
	}
	if !p.remote {
		return remoteError(field, ref)
	}
	if _, err := parseGitRef(ref); err != nil {
		return fmt.Errorf("%s %q: %w", field, ref, refusedRemote(err))
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

// checkPluginConfigs checks the builtin plugin configurations (objects of apiVersion
// "builtin") among the YAML documents of data, which may be any file kustomize reads: it
// refuses those that would download a file or inflate a Helm chart, and those of a remote
// repository that name files outside it. Documents that do not parse are left for kustomize
// to report.
func checkPluginConfigs(data []byte, p policy) error {
	_, err := checkPluginConfigsInFile(data, p)
	return err
}

// checkPluginConfigsInFile is checkPluginConfigs that also returns the document that failed.
func checkPluginConfigsInFile(data []byte, p policy) (int, error) {
	if !strings.Contains(string(data), "builtin") {
		return 0, nil // fast path for ordinary manifests
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
		if err := checkPluginConfig(v, p); err != nil {
			return doc.index, err
		}
	}
	return 0, nil
}

// pluginPathFields are the fields of builtin plugin configurations that name files to load:
// by plugin kind, paths of field names ("replacements.path" is the path of each item of
// replacements).
var pluginPathFields = map[string][]string{
	"PatchTransformer":               {"path"},
	"PatchJson6902Transformer":       {"path"},
	"PatchStrategicMergeTransformer": {"paths"},
	"ReplacementTransformer":         {"replacements.path"},
	"ValueAddTransformer":            {"targetFilePath"},
	"ConfigMapGenerator":             {"files", "envs", "env"},
	"SecretGenerator":                {"files", "envs", "env"},
}

func checkPluginConfig(v any, p policy) error {
	m, ok := v.(map[string]any)
	if !ok || m["apiVersion"] != "builtin" {
		return nil
	}
	kind, _ := m["kind"].(string)
	switch {
	case kind == "HelmChartInflationGenerator":
		if p.helm {
			return fmt.Errorf("%s: %w", kind, errHelmGenerator{})
		}
		return fmt.Errorf("%s: %w", kind, ErrHelmChartsNotSupported)
	case kind == "ConfigMapGenerator" || kind == "SecretGenerator":
		for _, f := range pluginPathFields[kind] {
			for _, s := range stringValues(foldedField(m, f)) {
				if s = s[strings.LastIndex(s, "=")+1:]; isHTTPURL(s) {
					return remoteFileError(kind, s, p)
				}
				if err := p.contain(kind, s); err != nil {
					return err
				}
			}
		}
	case pluginPathFields[kind] != nil:
		var err error
		walkStrings(m, func(s string) {
			if err == nil && !strings.Contains(s, "\n") && isHTTPURL(s) {
				err = remoteFileError(kind, s, p)
			}
		})
		if err != nil {
			return err
		}
		for _, f := range pluginPathFields[kind] {
			for _, s := range stringValues(foldedField(m, f)) {
				if strings.Contains(s, "\n") {
					continue // an inline patch
				}
				if err := p.contain(kind, s); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// foldedField returns the values at a dotted path of field names in v, descending into
// lists. Names match as kustomize decodes plugin configurations (encoding/json): ignoring
// case.
func foldedField(v any, dotted string) any {
	name, rest, nested := strings.Cut(dotted, ".")
	var out []any
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if !strings.EqualFold(k, name) {
				continue
			}
			if nested {
				e = foldedField(e, rest)
			}
			out = append(out, e)
		}
	case []any:
		for _, e := range v {
			out = append(out, foldedField(e, dotted))
		}
	}
	return out
}

// stringValues returns the strings in v, a string or a (nested) list.
func stringValues(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, stringValues(e)...)
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

// remoteFileError refuses a file to download. Without remote bases, the message is
// remoteError's.
func remoteFileError(field, ref string, p policy) error {
	if !p.remote {
		return remoteError(field, ref)
	}
	return fmt.Errorf("%s %q: %w", field, ref, refusedRemote(errFileURL))
}

// Reasons to refuse plugin configurations from remote repositories: kustomize transforms
// those of a directory (a kustomization) before loading the files they name, so their paths
// cannot be checked.
var (
	errRemotePlugins = errors.New("remote generators, transformers and validators are not supported")
	errPluginDir     = errors.New("generators, transformers and validators of a remote base must be files or inline, not directories")
)

// refusedRemote makes err, the reason for refusing a remote reference, an
// ErrRemoteNotSupported.
func refusedRemote(err error) error {
	if errors.Is(err, errFileURL) || errors.Is(err, errFileGit) || errors.Is(err, errRemotePlugins) || errors.Is(err, errPluginDir) {
		return &refusedRemoteError{err}
	}
	return &refusedRemoteError{fmt.Errorf("not a Git URL kustomize accepts: %w", err)}
}

// refusedRemoteError is a remote reference refused for a reason of its own.
type refusedRemoteError struct{ err error }

func (e *refusedRemoteError) Error() string   { return e.err.Error() }
func (e *refusedRemoteError) Unwrap() []error { return []error{e.err, ErrRemoteNotSupported} }

// errHelmGenerator refuses HelmChartInflationGenerator plugin configurations, which only
// kustomize's helm command could inflate, when helmCharts are supported.
type errHelmGenerator struct{}

func (errHelmGenerator) Error() string {
	return "HelmChartInflationGenerator configurations are not supported; use helmCharts in the kustomization"
}

func (errHelmGenerator) Unwrap() error { return ErrHelmChartsNotSupported }
