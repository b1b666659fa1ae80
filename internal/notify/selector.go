package notify

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Selector is a checked SelectorSpec. A zero Selector selects everything.
type Selector struct {
	// Labels must match the object's labels; nil matches all.
	Labels labels.Selector
	// Projects, when set, must contain the object's Project ("default" for an empty one).
	Projects []string
	// ApplicationSets, when set, must contain the name of the object's ApplicationSet.
	ApplicationSets []string
}

// Target is what a Selector looks at: the labels, Project and ApplicationSet of an
// Application, or of an ApplicationSet (its own name; the Project of its template).
type Target struct {
	Labels         map[string]string
	Project        string
	ApplicationSet string
}

// ApplicationTarget returns what selectors see of app: its labels, its Project, and the
// ApplicationSet named by its label navarch.io/applicationset.
func ApplicationTarget(app *navarchv1.Application) Target {
	return Target{Labels: app.Labels, Project: project(app.Spec.Project), ApplicationSet: app.Labels[navarchv1.LabelApplicationSet]}
}

// ApplicationSetTarget returns what selectors see of set: its own labels, the Project of
// its template as written, and its name.
func ApplicationSetTarget(set *navarchv1.ApplicationSet) Target {
	return Target{Labels: set.Labels, Project: project(set.Spec.Template.Spec.Project), ApplicationSet: set.Name}
}

func project(p string) string {
	if p == "" {
		return navarchv1.DefaultProject
	}
	return p
}

// Matches reports whether the selector selects t.
func (s Selector) Matches(t Target) bool {
	if s.Labels != nil && !s.Labels.Matches(labels.Set(t.Labels)) {
		return false
	}
	if len(s.Projects) > 0 && !slices.Contains(s.Projects, t.Project) {
		return false
	}
	if len(s.ApplicationSets) > 0 && (t.ApplicationSet == "" || !slices.Contains(s.ApplicationSets, t.ApplicationSet)) {
		return false
	}
	return true
}
