package fleetview

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func app(name string, labels map[string]string, src navarchv1.ApplicationSource) *navarchv1.Application {
	return &navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: labels},
		Spec:       navarchv1.ApplicationSpec{Source: src},
	}
}

func TestRow(t *testing.T) {
	set := map[string]string{navarchv1.LabelApplicationSet: "fleet"}
	named := map[string]string{navarchv1.LabelApplicationSet: "fleet", "app.kubernetes.io/name": "api"}
	for _, tc := range []struct {
		app       *navarchv1.Application
		name, set string
	}{
		{app("ingress", nil, navarchv1.ApplicationSource{Path: "infra/ingress"}), "ingress", ""},
		{app("checkout-dev-1", nil, navarchv1.ApplicationSource{Path: "checkout"}), "checkout-dev-1", ""},
		{app("api-prod-eu", set, navarchv1.ApplicationSource{Path: "apps/api"}), "fleet:apps/api", "fleet"},
		{app("api-prod-eu", named, navarchv1.ApplicationSource{Path: "overlays/prod"}), "fleet:api", "fleet"},
		{app("redis-dev", set, navarchv1.ApplicationSource{Chart: "redis"}), "fleet:redis", "fleet"},
	} {
		name, set := Row(tc.app)
		if name != tc.name || set != tc.set {
			t.Errorf("Row(%s) = %q, %q; want %q, %q", tc.app.Name, name, set, tc.name, tc.set)
		}
	}
}

func TestColumn(t *testing.T) {
	clusters := []navarchv1.Cluster{{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: navarchv1.ClusterSpec{Server: "https://prod:6443"}}}
	for _, tc := range []struct {
		d    navarchv1.ApplicationDestination
		want string
	}{
		{navarchv1.ApplicationDestination{Name: "prod"}, "prod"},
		{navarchv1.ApplicationDestination{Server: "https://prod:6443"}, "prod"},
		{navarchv1.ApplicationDestination{Server: "https://kubernetes.default.svc"}, navarchv1.InClusterName},
		{navarchv1.ApplicationDestination{Name: "staging"}, "staging"},
		{navarchv1.ApplicationDestination{Server: "https://elsewhere:6443"}, "https://elsewhere:6443"},
	} {
		if got := Column(tc.d, clusters); got != tc.want {
			t.Errorf("Column(%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestSortColumnsPutsRegisteredClustersFirstThenInClusterThenTheRest(t *testing.T) {
	type col struct {
		name       string
		registered bool
	}
	cols := []col{{"zeta", false}, {navarchv1.InClusterName, false}, {"prod", true}, {"alpha", false}, {"dev", true}}
	SortColumns(cols, func(c col) (string, bool) { return c.name, c.registered })
	var got []string
	for _, c := range cols {
		got = append(got, c.name)
	}
	if want := []string{"dev", "prod", navarchv1.InClusterName, "alpha", "zeta"}; !slices.Equal(got, want) {
		t.Errorf("SortColumns = %v, want %v", got, want)
	}
}
