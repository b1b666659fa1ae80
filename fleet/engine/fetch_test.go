package engine

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/gitrepo"
)

// An Application whose source cannot be fetched looks again no later than the next Git poll:
// a commit that fixes it is noticed then, not after a fixed 30 s (seen with a 10 s poll).
func TestAFailedFetchIsRetriedByTheNextPoll(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reader, err := gitrepo.New(gitrepo.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	// Never contacted: the fetch fails first. Port 1 on loopback refuses connections.
	dest, err := clustercache.New(ctx, clustercache.Options{InCluster: &rest.Config{Host: "https://127.0.0.1:1"}}).InCluster()
	if err != nil {
		t.Fatal(err)
	}
	for poll, want := range map[time.Duration]time.Duration{
		10 * time.Second: 10 * time.Second,
		3 * time.Minute:  fetchErrorWait,
	} {
		e := New(Options{Source: source.New(source.Options{Git: reader, PollInterval: poll})})
		app := &navarchv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "apps"},
			Spec: navarchv1.ApplicationSpec{
				Source:      navarchv1.ApplicationSource{RepoURL: "http://127.0.0.1:1/missing.git", Path: "apps"},
				Destination: navarchv1.ApplicationDestination{Name: navarchv1.InClusterName, Namespace: "apps"},
			},
		}
		res, err := e.Reconcile(ctx, app, dest, false)
		if err != nil {
			t.Fatalf("poll %s: Reconcile: %v", poll, err)
		}
		if !meta.IsStatusConditionTrue(app.Status.Conditions, navarchv1.ApplicationComparisonError) {
			t.Errorf("poll %s: no ComparisonError: %+v", poll, app.Status.Conditions)
		}
		if res.RequeueAfter != want {
			t.Errorf("poll %s: looks again after %s, want %s", poll, res.RequeueAfter, want)
		}
	}
}
