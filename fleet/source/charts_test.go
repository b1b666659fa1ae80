package source

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/helm"
	"github.com/navarch-io/navarch/fleet/helm/repo"
	"github.com/navarch-io/navarch/internal/gitserver"
)

// A chart in Git whose dependency is a version range (no Chart.lock) follows the repository:
// a newly published matching version renders at the next refresh, though the commit is the
// same, and not before.
func TestDependencyRangesFollowTheirRepository(t *testing.T) {
	charts := startChartRepository(t)
	lib := func(version string) {
		t.Helper()
		if _, err := charts.AddChartFiles("lib", version, map[string]string{
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lib}\ndata: {version: {{ .Chart.Version | quote }}}\n",
		}); err != nil {
			t.Fatal(err)
		}
	}
	lib("1.0.0")
	client := repo.New(repo.Options{})
	fx := newFixture(t, Options{Charts: client, Helm: helm.New(helm.Options{Charts: RecordChartLookups(client)})})
	fx.push(t, map[string]string{
		"charts/app/Chart.yaml":        fmt.Sprintf("apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- {name: lib, version: ^1.0.0, repository: %s}\n", charts.URL()),
		"charts/app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\n",
	})
	src := navarchv1.ApplicationSource{RepoURL: fx.server.RepoURL(repoName), Path: "charts/app", TargetRevision: "main"}
	var dependencies []string // each fetch's Manifests.Dependencies
	fetch := func(refresh bool) []string {
		t.Helper()
		m, err := fx.fetcher.FetchSources(context.Background(), Request{Sources: []navarchv1.ApplicationSource{src}, Refresh: refresh,
			ReleaseName: "app", Namespace: "apps", Capabilities: clusterCapabilities})
		if err != nil {
			t.Fatal(err)
		}
		dependencies = append(dependencies, m.Dependencies)
		return summary(m.Objects)
	}
	want := func(version string) []string { return []string{"ConfigMap lib version=" + version, "ConfigMap app"} }
	if got := fetch(false); !slices.Equal(got, want("1.0.0")) {
		t.Fatalf("objects %q, want %q", got, want("1.0.0"))
	}
	lib("1.1.0")
	if got := fetch(true); !slices.Equal(got, want("1.1.0")) {
		t.Errorf("after lib 1.1.0 was published and a refresh: objects %q, want %q", got, want("1.1.0"))
	}
	lib("2.0.0") // outside the range
	if got := fetch(true); !slices.Equal(got, want("1.1.0")) {
		t.Errorf("after lib 2.0.0 was published: objects %q, want %q", got, want("1.1.0"))
	}
	// The same commit rendered lib 1.0.0, then 1.1.0 twice: Dependencies tell them apart.
	if d := dependencies; d[0] == "" || d[1] == d[0] || d[2] != d[1] {
		t.Errorf("Dependencies of the three fetches: %q; want set, the second different from the first, the third the second's", d)
	}
}

// Refs must be unique and belong to Git sources.
func TestRefsAreCheckedBeforeFetching(t *testing.T) {
	f := New(Options{})
	for _, tc := range []struct {
		sources []navarchv1.ApplicationSource
		want    string
	}{
		{[]navarchv1.ApplicationSource{{RepoURL: "https://charts.example", Chart: "web", Ref: "values"}, {RepoURL: "https://git.example/v.git", Ref: "other"}},
			`sources[0] (https://charts.example): ref "values": only Git sources lend their files`},
		{[]navarchv1.ApplicationSource{{RepoURL: "https://git.example/a.git", Ref: "v"}, {RepoURL: "https://git.example/b.git", Ref: "v"}},
			`sources[1] (https://git.example/b.git): ref "v": sources[0] has the same ref`},
	} {
		_, err := f.FetchSources(context.Background(), Request{Sources: tc.sources})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FetchSources = %v, want an error saying %q", err, tc.want)
		}
	}
}

// A refresh that finds the revision gone (or the repository unreadable) is not hidden by the
// next Fetch answering from the resolution before it: that one asks Git again.
func TestAFailedLookupIsNotAnsweredFromTheOlderResolution(t *testing.T) {
	fx := newFixture(t, Options{})
	src := fx.source()
	fx.fetch(t, src, "", false)
	dir, err := fx.server.RepoDir(repoName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gitserver.Git(dir, "update-ref", "-d", "refs/heads/main"); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.fetcher.Fetch(context.Background(), src, "", true); err == nil {
		t.Fatal("a refresh of a deleted branch succeeded")
	}
	if m, err := fx.fetcher.Fetch(context.Background(), src, "", false); err == nil {
		t.Errorf("the Fetch after the failed refresh answered commit %s from the older resolution", m.Commit)
	}
}
