package argocd

import (
	"fmt"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/project"
)

// AppProjectKind is the kind of Argo CD's projects.
const AppProjectKind = "AppProject"

var projectKind = kindRules{kind: "Project", argoKind: AppProjectKind, crd: "projects.navarch.io",
	field: appProjectRule, object: (*converter).projectObjectRules}

// Project converts an Argo CD AppProject, or checks a navarch Project, into a navarch Project
// of the same name in namespace, the controller's namespace, where navarch reads Projects.
// The fields navarch shares with AppProject (sourceRepos, destinations, the resource white-
// and blacklists, sourceNamespaces, syncWindows) are copied as they are. Of the others, those
// whose loss grants no one anything (roles, orphanedResources) are dropped with a Warning;
// those that would let Applications do what Argo CD refuses them (signatureKeys,
// destinationServiceAccounts, permitOnlyProjectScopedClusters, a sync window's andOperator)
// are errors. The result is checked as the controller would check it, so an invalid pattern,
// schedule or time zone is reported here, naming its field.
func Project(obj map[string]any, namespace string) (*navarchv1.Project, []Warning, error) {
	out := &navarchv1.Project{}
	warnings, err := convert(obj, projectKind, out)
	if err != nil {
		return nil, warnings, err
	}
	if old := out.Namespace; old != "" && old != namespace {
		warnings = append(warnings, Warning{Field: "metadata.namespace",
			Message: fmt.Sprintf("%q becomes %q: navarch reads Projects in its controller's namespace", old, namespace)})
	}
	out.Namespace = namespace
	if obj["apiVersion"] == APIVersion && len(out.Spec.SourceNamespaces) == 0 {
		warnings = append(warnings, Warning{Field: "spec.sourceNamespaces", Message: fmt.Sprintf(
			"empty: only Applications and ApplicationSets in %s may name this Project, as only those in Argo CD's namespace could; "+
				"list the namespaces the Applications that name it move to", namespace)})
	}
	if _, err := project.Compile(out, namespace); err != nil {
		return nil, warnings, err
	}
	return out, warnings, nil
}

// appProjectRule decides what happens to one field of an Argo CD AppProject. Fields navarch's
// Project has are kept.
func appProjectRule(field, _ string, val any) rule {
	switch indices.ReplaceAllString(field, "[]") {
	case "spec.roles":
		return rule{action: drop, message: "dropped: navarch has no project roles and tokens; who may see and change Applications " +
			"is Kubernetes RBAC on their namespace (dropping roles grants no one access)"}
	case "spec.orphanedResources":
		return rule{action: drop, message: "dropped: navarch does not report orphaned resources (in Argo CD they are only reported)"}
	case "spec.signatureKeys":
		if isEmpty(val) {
			return rule{action: drop, message: "dropped: empty, no commit signature is required"}
		}
		return rule{action: unsupported, message: "navarch does not verify commit signatures, so it would sync commits " +
			"Argo CD refuses; remove the field to sync this Project's Applications without verification"}
	case "spec.destinationServiceAccounts":
		if isEmpty(val) {
			return rule{action: drop, message: "dropped: empty"}
		}
		return rule{action: unsupported, message: "navarch does not impersonate a service account per destination: it syncs " +
			"with the Cluster's credentials; remove the field if Argo CD's application.sync.impersonation.enabled is off"}
	case "spec.permitOnlyProjectScopedClusters":
		if isEmpty(val) {
			return rule{action: drop, message: "dropped: false, which is navarch's behaviour"}
		}
		return rule{action: unsupported, message: "navarch Clusters belong to no Project; list the clusters this Project " +
			"may deploy to in spec.destinations instead"}
	case "spec.syncWindows[].andOperator":
		if isEmpty(val) {
			return rule{action: drop, message: "dropped: false, which is navarch's behaviour"}
		}
		return rule{action: unsupported, message: "navarch applies a window to an Application matching any of applications, " +
			"namespaces and clusters, never only to one matching all of them"}
	case "spec.syncWindows[].description":
		return rule{action: drop, message: "dropped: informational only"}
	}
	return rule{action: keep}
}

// isEmpty reports whether an Argo CD field's value is its zero value: absent, false or empty.
func isEmpty(val any) bool {
	switch v := val.(type) {
	case nil:
		return true
	case bool:
		return !v
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// projectObjectRules checks that every destination names its cluster. Argo CD accepts an
// entry with neither name nor server, and it matches no cluster; navarch refuses it.
func (c *converter) projectObjectRules(path string, obj map[string]any) {
	if indices.ReplaceAllString(path, "[]") != "spec.destinations[]" {
		return
	}
	name, _ := obj["name"].(string)
	server, _ := obj["server"].(string)
	if name == "" && server == "" {
		c.fail(path, "one of name and server must be set: the entry names no cluster (in Argo CD it matches none); "+
			"name the cluster, `*` for any, or remove the entry")
	}
}
