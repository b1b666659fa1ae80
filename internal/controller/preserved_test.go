package controller

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/testenv"
)

// Labels and annotations follow the template wholesale, as in Argo CD: a hand edit of a
// templated key is reverted, a key the template stops setting is removed, and so is a key
// added by hand; preservedFields keep their live value, as do the keys navarch and kubectl own.
func TestPreservedFieldsAndTemplatedMetadata(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	set := applyAppSet(t, ns, `
metadata: {name: s}
spec:
  generators: [{list: {elements: [{name: a}]}}]
  preservedFields:
    annotations: [example.com/owner]
    labels: [env]
  template:
    metadata:
      name: '{{name}}'
      labels: {team: web, tier: gold, env: dev}
      annotations: {note: templated}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: 'apps/{{name}}'}
      destination: {name: in-cluster, namespace: '{{name}}'}
`)
	waitForApps(t, ns, "a")
	waitForCondition(t, ns, "s", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")

	testenv.Update(t, env.Client, &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}}, func(a *navarchv1.Application) {
		a.Labels["team"] = "hacked"                                        // templated: reverted
		a.Labels["env"] = "hotfix"                                         // templated but preserved: kept
		a.Annotations["example.com/owner"] = "ana"                         // preserved: kept
		a.Annotations["example.com/stray"] = "x"                           // neither: removed
		a.Annotations[navarchv1.AnnotationAutomatedSyncPaused] = "by hand" // navarch's: kept
		a.Annotations[corev1.LastAppliedConfigAnnotation] = "{}"           // kubectl's: kept
	})
	app := func() navarchv1.Application { return listApps(t, ns)["a"] }
	testenv.Eventually(t, "the hand edits of templated and unknown keys are reverted", func() string {
		a := app()
		if a.Labels["team"] != "web" {
			return "label team is " + a.Labels["team"]
		}
		if v, ok := a.Annotations["example.com/stray"]; ok {
			return "annotation example.com/stray is still " + v
		}
		return ""
	})
	kept := func(what string) func() string {
		return func() string {
			a := app()
			for _, c := range []struct{ key, got, want string }{
				{"label env", a.Labels["env"], "hotfix"},
				{"annotation example.com/owner", a.Annotations["example.com/owner"], "ana"},
				{"annotation " + navarchv1.AnnotationAutomatedSyncPaused, a.Annotations[navarchv1.AnnotationAutomatedSyncPaused], "by hand"},
				{"annotation " + corev1.LastAppliedConfigAnnotation, a.Annotations[corev1.LastAppliedConfigAnnotation], "{}"},
				{"annotation note", a.Annotations["note"], "templated"},
			} {
				if c.got != c.want {
					return fmt.Sprintf("%s: %s is %q, want %q", what, c.key, c.got, c.want)
				}
			}
			return ""
		}
	}
	refresh(t, set)
	testenv.Consistently(t, 2*time.Second, "the preserved and owned keys are kept", kept("after a pass"))

	// A label the template no longer sets is removed; the preserved keys stay.
	testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) { delete(s.Spec.Template.Metadata.Labels, "tier") })
	testenv.Eventually(t, "the label tier, dropped from the template, is removed", func() string {
		if v, ok := app().Labels["tier"]; ok {
			return "label tier is still " + v
		}
		return ""
	})
	if msg := kept("after the template changed")(); msg != "" {
		t.Error(msg)
	}
	if got := app().Labels[navarchv1.LabelApplicationSet]; got != "s" {
		t.Errorf("label %s is %q, want s", navarchv1.LabelApplicationSet, got)
	}
}
