package argocd

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/gitrepo"
)

// argoFinalizer is Argo CD's cascade-delete finalizer; navarch's equivalent is
// navarchv1.FinalizerResources.
const argoFinalizer = "resources-finalizer.argocd.argoproj.io"

type action int

const (
	keep action = iota
	drop
	unsupported
	rewrite
)

type rule struct {
	action  action
	message string
	// rewrite returns the converted value and whether it changed.
	rewrite func(any) (any, bool)
}

var indices = regexp.MustCompile(`\[\d+\]`)

// wholeTemplate matches a value that is one template expression, such as '{{.repoURL}}'.
var wholeTemplate = regexp.MustCompile(`^\s*\{\{[^{}]*\}\}\s*$`)

// argoRule decides what happens to one field of an Argo CD Application or ApplicationSet.
// field is its full path; key its name. Fields navarch has under the same name and meaning
// (spec.project, the plugin generator, spec.preservedFields, ...) are kept.
func argoRule(field, key string, val any) rule {
	generic := indices.ReplaceAllString(field, "[]")
	parent := generic[:strings.LastIndex(generic, ".")]
	switch {
	case key == "info" && strings.HasSuffix(parent, "spec"):
		return rule{action: drop, message: "dropped: informational only"}
	case generic == "spec.applyNestedSelectors":
		return rule{action: drop, message: "dropped: navarch always applies the selectors of nested generators"}
	case key == "plugin" && isSource(parent):
		return rule{action: unsupported, message: "config management plugins are not supported"}
	case key == "jsonnet" && strings.HasSuffix(parent, "directory"):
		return rule{action: unsupported, message: "jsonnet is not supported"}
	case key == "managedNamespaceMetadata":
		return rule{action: unsupported, message: "managed namespace metadata is not supported; add a Namespace manifest to the source instead"}
	case key == "flatList" && strings.HasSuffix(parent, "clusters"):
		return rule{action: unsupported, message: "flatList is not supported"}
	case isGeneratorEntry(parent) && key == "clusterDecisionResource":
		return rule{action: unsupported, message: "the clusterDecisionResource generator is not supported"}
	case strings.HasSuffix(parent, "pullRequest") && !slices.Contains(pullRequestFields, key):
		return rule{action: unsupported, message: "the " + key + " pull-request provider is not supported; only github is"}
	case strings.HasSuffix(parent, "scmProvider") && !slices.Contains(scmProviderFields, key):
		return rule{action: unsupported, message: "the " + key + " SCM provider is not supported; only github is"}
	case key == "version" && strings.HasSuffix(parent, ".helm"):
		return helmVersionRule(val)
	case key == "finalizers" && strings.HasSuffix(parent, "template.metadata"):
		return rule{action: rewrite, message: argoFinalizer + " becomes " + navarchv1.FinalizerResources, rewrite: rewriteFinalizers}
	}
	return rule{action: keep}
}

// pullRequestFields and scmProviderFields are the fields of those generators that are not a
// provider: any other key names a provider (gitlab, bitbucket, ...).
var (
	pullRequestFields = []string{"github", "filters", "requeueAfterSeconds", "template", "values", "continueOnRepoNotFoundError"}
	scmProviderFields = []string{"github", "filters", "cloneProtocol", "requeueAfterSeconds", "template", "values"}
)

// isGeneratorEntry reports whether path (indices generalised) is a generator list entry.
func isGeneratorEntry(path string) bool { return strings.HasSuffix(path, "generators[]") }

func rewriteFinalizers(v any) (any, bool) {
	list, ok := v.([]any)
	if !ok {
		return v, false
	}
	out := make([]any, len(list))
	changed := false
	for i, f := range list {
		if f == argoFinalizer {
			f, changed = navarchv1.FinalizerResources, true
		}
		out[i] = f
	}
	return out, changed
}

// isSource reports whether path (indices generalised) is an ApplicationSource: spec.source,
// an entry of spec.sources, or the same in a template or a sync operation.
func isSource(path string) bool {
	return strings.HasSuffix(path, ".source") || strings.HasSuffix(path, ".sources[]")
}

// helmVersionRule keeps Argo CD's `helm.version: v3`, spells its "3" navarch's way, and refuses
// Helm 2, which navarch cannot render.
func helmVersionRule(val any) rule {
	switch val {
	case "v3":
		return rule{action: keep}
	case "3":
		return rule{action: rewrite, message: `"3" becomes "v3"`, rewrite: func(any) (any, bool) { return "v3", true }}
	}
	return rule{action: unsupported, message: "only Helm v3 is supported"}
}

// argoObjectRules applies the rules that look at several fields of one object of an Argo CD
// Application or ApplicationSet, before the fields themselves are walked. It edits obj in
// place.
func (c *converter) argoObjectRules(path string, obj map[string]any) {
	if !c.argo {
		return
	}
	generic := indices.ReplaceAllString(path, "[]")
	if generic == "spec" || strings.HasSuffix(generic, ".spec") {
		if _, ok := obj["sources"]; ok {
			if _, ok := obj["source"]; ok {
				// navarch accepts exactly one of them; Argo CD reads sources and ignores source.
				delete(obj, "source")
				c.warn(path+".source", "dropped: Argo CD ignores source when sources is set")
			}
		}
	}
	if isSource(generic) {
		c.chartRepoURL(path, obj)
	}
}

// chartRepoURL carries over where a source's chart comes from. Argo CD reads a chart whose
// repoURL has no scheme (registry-1.docker.io/bitnamicharts) from an OCI registry; navarch
// names OCI registries oci://, and reads oci:// repositories only for charts.
func (c *converter) chartRepoURL(path string, obj map[string]any) {
	repoURL, _ := obj["repoURL"].(string)
	chart, _ := obj["chart"].(string)
	field := path + ".repoURL"
	hasScheme := strings.Contains(repoURL, "://")
	switch {
	case repoURL == "":
	case chart == "" && strings.HasPrefix(strings.ToLower(repoURL), "oci://"):
		c.fail(field, "OCI artifacts other than Helm charts are not supported; name the chart in chart and its registry in repoURL")
	case chart == "" || hasScheme || wholeTemplate.MatchString(repoURL):
		// A parameter that is the whole URL usually carries its scheme.
	case strings.Contains(repoURL, "{{"):
		c.warn(field, "a chart's repoURL without a scheme: Argo CD reads the chart from an OCI registry, navarch only when repoURL starts with oci://; make sure the template yields oci://")
	default:
		converted := "oci://" + repoURL
		obj["repoURL"] = converted
		c.warn(field, fmt.Sprintf("becomes %q: Argo CD reads a chart whose repoURL has no scheme from an OCI registry; navarch names OCI registries oci://", gitrepo.RedactURL(converted)))
	}
}
