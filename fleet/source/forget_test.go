package source

import (
	"testing"
	"time"
)

// A webhook reports a push: Forget makes the next Fetch see the new commit at once, well
// within the poll interval, and restarts the interval from there.
func TestForgetMakesTheNextFetchAskGit(t *testing.T) {
	fx := newFixture(t, Options{})
	src := fx.source()
	v1 := []string{"ConfigMap web-config version=1", "Service web"}
	v2 := []string{"ConfigMap web-config version=2", "Service web"}

	checkManifests(t, "first fetch", fx.fetch(t, src, "", false), fx.first, v1, pollInterval)
	fx.now = fx.now.Add(time.Minute)
	second := fx.push(t, map[string]string{"apps/web/configmap.yaml": configMap("2")})
	checkManifests(t, "fetch after the push", fx.fetch(t, src, "", false), fx.first, v1, pollInterval-time.Minute)

	// Another revision or another URL spelling is another entry: it keeps its resolution.
	fx.fetcher.Forget(src.RepoURL, "other")
	fx.fetcher.Forget(src.RepoURL+"/", src.TargetRevision)
	checkManifests(t, "fetch after forgetting other entries", fx.fetch(t, src, "", false), fx.first, v1, pollInterval-time.Minute)

	fx.fetcher.Forget(src.RepoURL, src.TargetRevision)
	checkManifests(t, "fetch after Forget", fx.fetch(t, src, "", false), second, v2, pollInterval)
	fx.now = fx.now.Add(time.Minute)
	checkManifests(t, "fetch a minute later", fx.fetch(t, src, "", false), second, v2, pollInterval-time.Minute)
}

// A lookup that began before Forget may have seen the old commit: it is not remembered, so it
// cannot hide the new commit for a poll interval.
func TestALookupThatBeganBeforeForgetIsNotRemembered(t *testing.T) {
	fx := newFixture(t, Options{})
	src := fx.source()
	// The webhook's Forget comes while the lookup of the first Fetch is under way: after it
	// read the clock, before it stores what Git answered.
	clock := fx.fetcher.now
	started := false
	fx.fetcher.now = func() time.Time {
		if started {
			return clock()
		}
		started = true
		began := fx.now
		fx.now = fx.now.Add(time.Second)
		fx.fetcher.Forget(src.RepoURL, src.TargetRevision)
		return began
	}
	checkManifests(t, "fetch during which Forget came", fx.fetch(t, src, "", false), fx.first,
		[]string{"ConfigMap web-config version=1", "Service web"}, pollInterval)

	second := fx.push(t, map[string]string{"apps/web/configmap.yaml": configMap("2")})
	checkManifests(t, "next fetch", fx.fetch(t, src, "", false), second,
		[]string{"ConfigMap web-config version=2", "Service web"}, pollInterval)
}
