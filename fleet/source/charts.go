package source

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/Masterminds/semver/v3"

	"github.com/navarch-io/navarch/fleet/helm"
)

// ChartRepositories resolve and fetch charts of Helm repositories and OCI registries
// (fleet/helm/repo's Client).
type ChartRepositories interface {
	Charts
	helm.ChartFetcher
}

// RecordChartLookups wraps the chart fetcher of the Helm renderer that a Fetcher uses, so that
// the Fetcher learns which versions a rendering resolved from constraints: chart dependencies
// without Chart.lock, kustomize helmCharts with a version range. A remembered rendering is then
// used only while those constraints still resolve to the same versions, as it is for remote
// kustomize bases; a newly published matching version renders again at the next poll.
func RecordChartLookups(c ChartRepositories) helm.ChartFetcher { return chartRecorder{c} }

type chartRecorder struct{ c ChartRepositories }

// chartLookup is a constraint resolved during a rendering.
type chartLookup struct{ repoURL, chart, constraint string }

// chartLookups are the constraints one rendering resolved, and the versions they gave.
type chartLookups struct {
	refresh bool
	allow   func(url string) error // may the rendering read this chart repository?
	mu      sync.Mutex
	seen    map[chartLookup]string
	fetched map[string]bool // every chart repository the rendering read
}

// reachedRepositories are the repositories a rendering read beyond its sources: the chart
// repositories, and the Git repositories of remote bases.
func (l *chartLookups) reachedRepositories(remotes map[resolveKey]string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := maps.Clone(l.fetched)
	if set == nil {
		set = map[string]bool{}
	}
	for k := range remotes {
		set[k.url] = true
	}
	return slices.Sorted(maps.Keys(set))
}

type chartLookupsKey struct{}

func (r chartRecorder) FetchChart(ctx context.Context, repoURL, name, version string, passCredentials bool) ([]byte, string, error) {
	rec, _ := ctx.Value(chartLookupsKey{}).(*chartLookups)
	if rec != nil {
		if err := rec.allow(repoURL); err != nil {
			return nil, "", err
		}
		rec.mu.Lock()
		if rec.fetched == nil {
			rec.fetched = map[string]bool{}
		}
		rec.fetched[repoURL] = true
		rec.mu.Unlock()
	}
	if rec != nil && !exactVersion(version) {
		exact, err := r.c.Resolve(ctx, repoURL, name, version, rec.refresh)
		if err != nil {
			return nil, "", err
		}
		rec.mu.Lock()
		if rec.seen == nil {
			rec.seen = map[chartLookup]string{}
		}
		rec.seen[chartLookup{repoURL, name, version}] = exact
		rec.mu.Unlock()
		version = exact
	}
	return r.c.FetchChart(ctx, repoURL, name, version, passCredentials)
}

// exactVersion reports whether version names one version rather than a range.
func exactVersion(version string) bool {
	_, err := semver.StrictNewVersion(version)
	return err == nil
}

// chartsUnchanged reports whether every constraint a rendering resolved still gives the
// version it gave; with refresh, the repositories are asked.
func (f *Fetcher) chartsUnchanged(ctx context.Context, lookups map[chartLookup]string, refresh bool) bool {
	for l, version := range lookups {
		if f.charts == nil {
			return false
		}
		now, err := f.charts.Resolve(ctx, l.repoURL, l.chart, l.constraint, refresh)
		if err != nil || now != version {
			return false
		}
	}
	return true
}
