package source

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/helm"
	"github.com/navarch-io/navarch/fleet/helm/repo"
	"github.com/navarch-io/navarch/fleet/render"
	"github.com/navarch-io/navarch/internal/chartserver"
)

const (
	benchChart        = "bench"
	benchChartVersion = "1.0.0"
	// benchChartObjects is how many objects the chart renders: a Deployment and a Service per
	// template.
	benchChartObjects = 80
)

// benchChartFiles are the files of the 40-template chart of fleet/helm's
// BenchmarkRender40Templates.
func benchChartFiles() map[string]string {
	return chartserver.WideChart(benchChart, benchChartVersion, 40)
}

// startChartRepository starts a Helm repository serving the 40-template chart.
func startChartRepository(tb testing.TB) *chartserver.Repository {
	tb.Helper()
	charts, err := chartserver.StartRepository(chartserver.RepositoryOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := charts.Close(); err != nil {
			tb.Errorf("close chart repository: %v", err)
		}
	})
	if _, err := charts.AddChartFiles(benchChart, benchChartVersion, benchChartFiles()); err != nil {
		tb.Fatal(err)
	}
	return charts
}

// newChartFetcher returns a Fetcher that resolves charts through a real repo.Client and
// renders them with a real helm.Renderer, as the controller wires them, and the Renderer. It
// has no Git reader: chart sources never read Git.
func newChartFetcher() (*Fetcher, *helm.Renderer) {
	client := repo.New(repo.Options{})
	renderer := helm.New(helm.Options{Charts: client})
	return New(Options{Charts: client, Helm: renderer}), renderer
}

// clusterCapabilities are those of every destination cluster of the chart tests.
func clusterCapabilities() (render.Capabilities, error) {
	return render.Capabilities{
		KubeVersion: "v1.37.2",
		APIVersions: []string{"v1", "apps/v1", "batch/v1", "networking.k8s.io/v1", "apps/v1/Deployment"},
	}, nil
}

// appValues are the values of Application i, with replicas Deployments.
func appValues(i, replicas int) string {
	return fmt.Sprintf("replicas: %d\ntag: \"1.%d\"\nlabels:\n  app: app-%03d\n", replicas, i, i)
}

// chartApplications are the requests of n Applications of the chart in the repository at
// repoURL, each with its own values, release and namespace; Application i runs i%5+1
// replicas.
func chartApplications(repoURL string, n int) []Request {
	apps := make([]Request, n)
	for i := range apps {
		apps[i] = Request{
			Sources: []navarchv1.ApplicationSource{{
				RepoURL:        repoURL,
				Chart:          benchChart,
				TargetRevision: benchChartVersion,
				Helm:           &navarchv1.ApplicationSourceHelm{Values: appValues(i, i%5+1)},
			}},
			ReleaseName:  fmt.Sprintf("app-%03d", i),
			Namespace:    fmt.Sprintf("team-%03d", i),
			Capabilities: clusterCapabilities,
		}
	}
	return apps
}

// fetchAll fetches every Application, one after the other, and checks that each rendered
// the whole chart.
func fetchAll(tb testing.TB, f *Fetcher, apps []Request) []*Manifests {
	tb.Helper()
	out := make([]*Manifests, len(apps))
	for i, app := range apps {
		m, err := f.FetchSources(tb.Context(), app)
		if err != nil {
			tb.Fatalf("Application %s: %v", app.ReleaseName, err)
		}
		if len(m.Objects) != benchChartObjects {
			tb.Fatalf("Application %s: %d objects, want %d", app.ReleaseName, len(m.Objects), benchChartObjects)
		}
		out[i] = m
	}
	return out
}

// deploymentReplicas is spec.replicas of the Deployment name among objs, or -1.
func deploymentReplicas(objs []*unstructured.Unstructured, name string) int64 {
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == name {
			if n, ok, _ := unstructured.NestedInt64(o.Object, "spec", "replicas"); ok {
				return n
			}
		}
	}
	return -1
}

// An unchanged resync of 10 Applications of one chart renders nothing, and changing one
// Application's values renders that Application only; the chart is downloaded once.
func TestUnchangedChartSourcesRenderNothing(t *testing.T) {
	charts := startChartRepository(t)
	archive := charts.ArchivePath(benchChart, benchChartVersion)
	fetcher, renderer := newChartFetcher()
	apps := chartApplications(charts.URL(), 10)

	first := fetchAll(t, fetcher, apps)
	for i, m := range first {
		if m.Commit != benchChartVersion {
			t.Errorf("Application %d: revision %q, want %q", i, m.Commit, benchChartVersion)
		}
		if got, want := deploymentReplicas(m.Objects, fmt.Sprintf("app-%03d-7", i)), int64(i%5+1); got != want {
			t.Errorf("Application %d: Deployment app-%03d-7 has %d replicas, want %d from its values", i, i, got, want)
		}
	}
	if s := renderer.Stats(); s.Rendered != uint64(len(apps)) || s.Failed != 0 {
		t.Fatalf("first pass: renderer stats %+v, want %d rendered and none failed", s, len(apps))
	}
	// A chart source's revision is its chart's version, which Revision gives without rendering.
	if rev, _, err := fetcher.Revision(context.Background(), apps[0]); err != nil || rev != benchChartVersion {
		t.Errorf("Revision of a chart source = %q, %v; want %q", rev, err, benchChartVersion)
	}
	if s := renderer.Stats(); s.Rendered != uint64(len(apps)) {
		t.Errorf("Revision rendered: renderer stats %+v", s)
	}

	before := renderer.Stats()
	again := fetchAll(t, fetcher, apps)
	after := renderer.Stats()
	if after.Rendered != before.Rendered {
		t.Errorf("an unchanged resync rendered %d charts, want 0", after.Rendered-before.Rendered)
	}
	// Each Application is answered by the Fetcher's cache, without asking the Renderer, or by
	// the Renderer's cache: either way with the very objects of the first pass.
	for i := range apps {
		if !sameObjects(again[i].Objects, first[i].Objects) {
			t.Errorf("unchanged resync: Application %d did not get its remembered objects", i)
		}
	}
	if n := after.Cached - before.Cached; n > uint64(len(apps)) || after.Failed != before.Failed {
		t.Errorf("unchanged resync of %d Applications: renderer stats went from %+v to %+v", len(apps), before, after)
	}

	const changed = 3
	apps[changed].Sources = []navarchv1.ApplicationSource{apps[changed].Sources[0]}
	apps[changed].Sources[0].Helm = &navarchv1.ApplicationSourceHelm{Values: appValues(changed, 7)}
	before = renderer.Stats()
	third := fetchAll(t, fetcher, apps)
	after = renderer.Stats()
	if n := after.Rendered - before.Rendered; n != 1 {
		t.Errorf("after changing one Application's values: %d charts rendered, want 1", n)
	}
	if got := deploymentReplicas(third[changed].Objects, fmt.Sprintf("app-%03d-7", changed)); got != 7 {
		t.Errorf("Application %d after its values changed: Deployment has %d replicas, want 7", changed, got)
	}
	for i := range apps {
		if i != changed && !sameObjects(third[i].Objects, first[i].Objects) {
			t.Errorf("Application %d, unchanged, did not get its remembered objects", i)
		}
	}
	if n := charts.Requests(archive); n != 1 {
		t.Errorf("the chart archive was requested %d times, want once", n)
	}
}
