package appset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestIgnoreDifferences(t *testing.T) {
	app := func(name, rev string, selfHeal bool, labels map[string]string) *navarchv1.Application {
		return &navarchv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: navarchv1.ApplicationSpec{
				Source:      navarchv1.ApplicationSource{RepoURL: "https://git.example/r.git", TargetRevision: rev},
				Destination: navarchv1.ApplicationDestination{Name: "prod"},
				SyncPolicy:  &navarchv1.SyncPolicy{Automated: &navarchv1.SyncPolicyAutomated{Prune: true, SelfHeal: selfHeal}},
			},
		}
	}
	tests := []struct {
		name         string
		rules        []navarchv1.ApplicationSetIgnoreDifferences
		wantRev      string
		wantSelfHeal bool
		wantLabel    string
	}{
		{name: "no rules: desired wins", wantRev: "main", wantSelfHeal: true, wantLabel: "a"},
		{name: "pointer keeps a hand-edited revision",
			rules:   []navarchv1.ApplicationSetIgnoreDifferences{{JSONPointers: []string{"/spec/source/targetRevision"}}},
			wantRev: "hotfix", wantSelfHeal: true, wantLabel: "a"},
		{name: "jq keeps selfHeal turned off by hand",
			rules:   []navarchv1.ApplicationSetIgnoreDifferences{{JQPathExpressions: []string{".spec.syncPolicy.automated.selfHeal"}}},
			wantRev: "main", wantSelfHeal: false, wantLabel: "a"},
		{name: "pointer into labels, escaped",
			rules:   []navarchv1.ApplicationSetIgnoreDifferences{{JSONPointers: []string{"/metadata/labels/team~1owner"}}},
			wantRev: "main", wantSelfHeal: true, wantLabel: "b"},
		{name: "a rule for another Application does not apply",
			rules:   []navarchv1.ApplicationSetIgnoreDifferences{{Name: "other", JSONPointers: []string{"/spec/source/targetRevision"}}},
			wantRev: "main", wantSelfHeal: true, wantLabel: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := app("web", "main", true, map[string]string{"team/owner": "a"})
			live := app("web", "hotfix", false, map[string]string{"team/owner": "b"})
			if err := IgnoreDifferences(tt.rules, desired, live); err != nil {
				t.Fatal(err)
			}
			if got := desired.Spec.Source.TargetRevision; got != tt.wantRev {
				t.Errorf("targetRevision = %q, want %q", got, tt.wantRev)
			}
			if got := desired.Spec.SyncPolicy.Automated.SelfHeal; got != tt.wantSelfHeal {
				t.Errorf("selfHeal = %v, want %v", got, tt.wantSelfHeal)
			}
			if got := desired.Labels["team/owner"]; got != tt.wantLabel {
				t.Errorf("label = %q, want %q", got, tt.wantLabel)
			}
		})
	}
}

func TestIgnoreDifferencesRejectsBadExpressions(t *testing.T) {
	app := &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	for _, rule := range []navarchv1.ApplicationSetIgnoreDifferences{
		{JSONPointers: []string{"spec/source"}},
		{JQPathExpressions: []string{".spec[["}},
	} {
		if err := IgnoreDifferences([]navarchv1.ApplicationSetIgnoreDifferences{rule}, app.DeepCopy(), app); err == nil {
			t.Errorf("%+v: want an error naming the field", rule)
		}
	}
}
