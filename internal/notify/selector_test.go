package notify

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestSelector(t *testing.T) {
	prodWeb := &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"env": "prod", "tier": "web", navarchv1.LabelApplicationSet: "apps"}}}
	prodWeb.Spec.Project = "shop"
	byHand := &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"env": "dev"}}}
	set := &navarchv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "apps", Labels: map[string]string{"env": "prod"}}}
	set.Spec.Template.Spec.Project = "shop"

	sel := func(l string, projects, sets []string) Selector {
		s := Selector{Projects: projects, ApplicationSets: sets}
		if l != "" {
			parsed, err := labels.Parse(l)
			if err != nil {
				t.Fatal(err)
			}
			s.Labels = parsed
		}
		return s
	}
	for _, tc := range []struct {
		name                      string
		sel                       Selector
		prodWeb, byHand, appsetOK bool
	}{
		{"empty selects all", Selector{}, true, true, true},
		{"labels", sel("env=prod", nil, nil), true, false, true},
		{"set-based labels", sel("tier in (web,api),env!=dev", nil, nil), true, false, false},
		{"projects", sel("", []string{"shop"}, nil), true, false, true},
		{"the default project", sel("", []string{"default"}, nil), false, true, false},
		{"applicationSets", sel("", nil, []string{"apps"}), true, false, true},
		{"other applicationSets", sel("", nil, []string{"other"}), false, false, false},
		{"all fields must match", sel("env=prod", []string{"default"}, nil), false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sel.Matches(ApplicationTarget(prodWeb)); got != tc.prodWeb {
				t.Errorf("prod web Application: %v, want %v", got, tc.prodWeb)
			}
			if got := tc.sel.Matches(ApplicationTarget(byHand)); got != tc.byHand {
				t.Errorf("Application by hand: %v, want %v", got, tc.byHand)
			}
			if got := tc.sel.Matches(ApplicationSetTarget(set)); got != tc.appsetOK {
				t.Errorf("ApplicationSet: %v, want %v", got, tc.appsetOK)
			}
		})
	}
}
