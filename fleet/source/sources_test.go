package source

import (
	"slices"
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// A kustomization whose base is in another repository: the rendering is remembered while the
// base stays, and a refresh that finds the base moved renders again.
func TestRemoteBaseFollowsItsRepository(t *testing.T) {
	fx := newFixture(t, Options{})
	overlay := fx.overlay(t, "namePrefix: prod-\n")

	first := fx.fetch(t, overlay, "", false)
	if got, want := summary(first.Objects), []string{"ConfigMap prod-web-config version=1", "Service prod-web"}; !slices.Equal(got, want) {
		t.Fatalf("objects %q, want %q", got, want)
	}
	if again := fx.fetch(t, overlay, "", false); !sameObjects(again.Objects, first.Objects) {
		t.Error("an unchanged overlay and base rendered again")
	}

	fx.push(t, map[string]string{"apps/web/configmap.yaml": configMap("2")})
	if stale := fx.fetch(t, overlay, "", false); !sameObjects(stale.Objects, first.Objects) {
		t.Error("the base was asked again before the poll interval without a refresh")
	}
	fresh := fx.fetch(t, overlay, "", true)
	if got, want := summary(fresh.Objects), []string{"ConfigMap prod-web-config version=2", "Service prod-web"}; !slices.Equal(got, want) {
		t.Errorf("after the base moved and a refresh: objects %q, want %q", got, want)
	}
	if fresh.Commit != first.Commit {
		t.Errorf("the overlay's commit changed from %s to %s; only the base moved", first.Commit, fresh.Commit)
	}
	// What tells a pass that the same commit rendered other objects.
	if first.Dependencies == "" || fresh.Dependencies == first.Dependencies {
		t.Errorf("Dependencies %q before the base moved, %q after; want them set and different", first.Dependencies, fresh.Dependencies)
	}
	if plain := fx.fetch(t, fx.source(), "", false); plain.Dependencies != "" {
		t.Errorf("a source without remote bases or charts has Dependencies %q, want none", plain.Dependencies)
	}
}

// A rendering the cache let go and rendered again from the same base has the same
// Dependencies: a pass that finds them unchanged need not compare again.
func TestDependenciesSurviveRenderingAgain(t *testing.T) {
	fx := newFixture(t, Options{CachedRenders: 1})
	overlay := fx.overlay(t, "")
	first := fx.fetch(t, overlay, "", false)
	fx.fetch(t, fx.source(), "", false) // takes the cache's only place
	again := fx.fetch(t, overlay, "", false)
	if sameObjects(again.Objects, first.Objects) {
		t.Fatal("the overlay's rendering was still cached: the test renders nothing again")
	}
	if again.Dependencies != first.Dependencies {
		t.Errorf("rendered again from the same base: Dependencies %q, want %q", again.Dependencies, first.Dependencies)
	}
}

// overlay makes apps/web a kustomization and returns the source of a repository "overlay" whose
// kustomization at prod has it as a remote base on main, followed by more (kustomization lines).
func (fx *fixture) overlay(t *testing.T, more string) navarchv1.ApplicationSource {
	t.Helper()
	fx.push(t, map[string]string{"apps/web/kustomization.yaml": "resources: [configmap.yaml, service.yaml]\n"})
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"prod/kustomization.yaml": "resources:\n- " + fx.server.RepoURL(repoName) + "//apps/web?ref=main\n" + more})
	if _, err := fx.server.CreateRepo("overlay", src); err != nil {
		t.Fatal(err)
	}
	return navarchv1.ApplicationSource{RepoURL: fx.server.RepoURL("overlay"), Path: "prod", TargetRevision: "main"}
}
