package controller

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/generators"
	"github.com/navarch-io/navarch/internal/appset"
)

// A pass that runs before the cache shows the Applications the previous pass created neither
// creates them again nor reports them; once the cache shows them, or after unseenFor, they
// are no longer awaited.
func TestCreatedApplicationsTheCacheHasNotShownAreAwaited(t *testing.T) {
	set := &navarchv1.ApplicationSet{}
	if err := yaml.Unmarshal([]byte(teamAppSet), set); err != nil {
		t.Fatal(err)
	}
	set.Namespace, set.UID = "platform", "set-uid"
	exp, err := appset.Expand(t.Context(), set, generators.Inputs{ApplicationSetName: set.Name})
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: set.Namespace, Name: set.Name}
	r := &ApplicationSetReconciler{}
	created := time.Now()

	first := r.plan(set, exp, nil, r.unseen.awaited(key, nil, created))
	if got := createdNames(first.create); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("the first pass creates %v, want a, b, c", got)
	}
	r.unseen.add(key, createdNames(first.create), created)

	// The cache shows only a.
	cached := map[string]*navarchv1.Application{"a": first.create[0]}
	second := r.plan(set, exp, cached, r.unseen.awaited(key, cached, created.Add(time.Second)))
	if len(second.create) != 0 || second.awaited != 2 || len(second.errs) != 0 {
		t.Errorf("a pass before the cache shows b and c creates %v and awaits %d, want nothing created and 2 awaited", createdNames(second.create), second.awaited)
	}
	if got := r.unseen.awaited(key, cached, created.Add(time.Second)); len(got) != 2 || got["a"] {
		t.Errorf("awaited %v once the cache shows a: want b and c", got)
	}

	// c never shows (deleted before the cache saw it): after unseenFor it is created again.
	cached["b"] = first.create[1]
	late := r.plan(set, exp, cached, r.unseen.awaited(key, cached, created.Add(unseenFor)))
	if got := createdNames(late.create); !slices.Equal(got, []string{"c"}) || late.awaited != 0 {
		t.Errorf("after %s a pass creates %v and awaits %d, want c created again and none awaited", unseenFor, got, late.awaited)
	}
	if len(r.unseen.m) != 0 {
		t.Errorf("what is left remembered: %v, want nothing", r.unseen.m)
	}

	r.unseen.add(key, []string{"d"}, created)
	r.unseen.forget(key)
	if got := r.unseen.awaited(key, nil, created); len(got) != 0 {
		t.Errorf("a deleted ApplicationSet's creations are still awaited: %v", got)
	}
}

func createdNames(apps []*navarchv1.Application) []string {
	var out []string
	for _, a := range apps {
		out = append(out, a.Name)
	}
	slices.Sort(out)
	return out
}
