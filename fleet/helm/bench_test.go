package helm

import (
	"fmt"
	"strconv"
	"testing"
	"testing/fstest"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/render"
	"github.com/navarch-io/navarch/internal/chartserver"
)

// chart40 is a chart of 40 templates, each a Deployment and a Service using shared helpers.
func chart40() fstest.MapFS {
	return addFiles(fstest.MapFS{}, "chart", chartserver.WideChart("bench", "1.0.0", 40))
}

// BenchmarkRender40Templates renders a chart of 40 templates (80 objects) with 100 different
// sets of values: "uncached" renders every time, "cached" serves the 100 renders from the
// cache.
func BenchmarkRender40Templates(b *testing.B) {
	fsys := chart40()
	reqs := make([]render.HelmRequest, 100)
	for i := range reqs {
		reqs[i] = render.HelmRequest{
			Chart: render.HelmChart{FS: fsys, Dir: "chart", Source: "chart"},
			Options: &navarchv1.ApplicationSourceHelm{Parameters: []navarchv1.HelmParameter{
				{Name: "replicas", Value: strconv.Itoa(i%5 + 1)},
				{Name: "tag", Value: fmt.Sprintf("1.%d", i), ForceString: true},
			}},
			ReleaseName:  "bench",
			Namespace:    "bench",
			Capabilities: render.Capabilities{KubeVersion: "v1.37.2"},
		}
	}
	run := func(b *testing.B, r *Renderer) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			objs, err := r.RenderChart(b.Context(), reqs[i%len(reqs)])
			if err != nil {
				b.Fatal(err)
			}
			if len(objs) != 80 {
				b.Fatalf("%d objects, want 80", len(objs))
			}
			i++
		}
	}
	b.Run("uncached", func(b *testing.B) {
		r := New(Options{CachedRenders: -1})
		run(b, r)
		if s := r.Stats(); s.Cached != 0 || s.Rendered == 0 {
			b.Fatalf("stats %+v: every render should render", s)
		}
	})
	b.Run("cached", func(b *testing.B) {
		r := New(Options{})
		for _, req := range reqs {
			if _, err := r.RenderChart(b.Context(), req); err != nil {
				b.Fatal(err)
			}
		}
		run(b, r)
		if s := r.Stats(); s.Rendered != uint64(len(reqs)) {
			b.Fatalf("stats %+v: only the warm-up should render", s)
		}
	})
}
