package argocd

import (
	"regexp"
	"slices"
	"strings"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
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

// argoRule decides what happens to one Argo CD field. field is its full path; key its name.
func argoRule(field, key string, val any) rule {
	generic := indices.ReplaceAllString(field, "[]")
	parent := generic[:strings.LastIndex(generic, ".")]
	switch {
	case key == "project" && strings.HasSuffix(parent, "spec"):
		if val != "default" {
			// A project other than default restricts what the Application may do; dropping it
			// would silently widen that.
			return rule{action: unsupported, message: "AppProjects are not supported; only `project: default` (no restrictions) can be dropped safely"}
		}
		return rule{action: drop, message: "dropped: navarch has no AppProjects (access is Kubernetes RBAC on the Application's namespace)"}
	case key == "info" && strings.HasSuffix(parent, "spec"):
		return rule{action: drop, message: "dropped: informational only"}
	case generic == "spec.applyNestedSelectors":
		return rule{action: drop, message: "dropped: navarch always applies the selectors of nested generators"}
	case key == "sources" && strings.HasSuffix(parent, "spec"):
		return rule{action: unsupported, message: "multiple sources are not supported; use one source"}
	case key == "chart" && strings.HasSuffix(parent, "source"):
		return rule{action: unsupported, message: "charts from Helm repositories are not supported; navarch reads sources from Git"}
	case key == "plugin" && strings.HasSuffix(parent, "source"):
		return rule{action: unsupported, message: "config management plugins are not supported"}
	case key == "jsonnet" && strings.HasSuffix(parent, "directory"):
		return rule{action: unsupported, message: "jsonnet is not supported"}
	case key == "managedNamespaceMetadata":
		return rule{action: unsupported, message: "managed namespace metadata is not supported; add a Namespace manifest to the source instead"}
	case generic == "spec.preservedFields":
		return rule{action: unsupported, message: "not supported; list the fields in spec.ignoreApplicationDifferences instead"}
	case key == "flatList" && strings.HasSuffix(parent, "clusters"):
		return rule{action: unsupported, message: "flatList is not supported"}
	case isGeneratorEntry(parent) && (key == "clusterDecisionResource" || key == "plugin"):
		return rule{action: unsupported, message: "the " + key + " generator is not supported"}
	case strings.HasSuffix(parent, "pullRequest") && !slices.Contains(pullRequestFields, key):
		return rule{action: unsupported, message: "the " + key + " pull-request provider is not supported; only github is"}
	case strings.HasSuffix(parent, "scmProvider") && !slices.Contains(scmProviderFields, key):
		return rule{action: unsupported, message: "the " + key + " SCM provider is not supported; only github is"}
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
