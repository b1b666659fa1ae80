package source

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkHelm100Applications fetches 100 Applications of one 40-template chart (80 objects
// each), each with its own values, release and namespace, from a real Helm repository. Every
// iteration starts cold, as a restarted controller does (a new repo.Client, helm.Renderer and
// Fetcher), fetches the 100 Applications, then fetches them again unchanged.
//
// Metrics: cold-ms/app, the first pass per Application; resync-ms/app, the unchanged pass per
// Application; resync-renders/op, charts rendered by the unchanged pass (must be 0);
// index-downloads/op and archive-downloads/op, requests the repository received for
// index.yaml and the chart's archive (the archive must be downloaded once); heap-MB, the heap
// in use after a GC that follows the cold pass, the 100 renderings cached, and heap-growth-MB,
// how much the cold pass added to it (the largest of the iterations).
func BenchmarkHelm100Applications(b *testing.B) {
	charts := startChartRepository(b)
	archive := charts.ArchivePath(benchChart, benchChartVersion)
	apps := chartApplications(charts.URL(), 100)
	var (
		cold, resync               time.Duration
		resyncRenders              uint64
		indexRequests, archiveReqs int
		heapMB, heapGrowthMB       float64
	)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		empty := heapInUseMB()
		b.StartTimer()

		charts.ResetRequests()
		fetcher, renderer := newChartFetcher()
		start := time.Now()
		fetchAll(b, fetcher, apps)
		cold += time.Since(start)

		b.StopTimer()
		full := heapInUseMB()
		heapMB, heapGrowthMB = max(heapMB, full), max(heapGrowthMB, full-empty)
		b.StartTimer()

		before := renderer.Stats()
		start = time.Now()
		fetchAll(b, fetcher, apps)
		resync += time.Since(start)
		after := renderer.Stats()
		if after.Rendered != before.Rendered {
			b.Fatalf("an unchanged resync of %d Applications rendered %d charts, want 0", len(apps), after.Rendered-before.Rendered)
		}
		resyncRenders += after.Rendered - before.Rendered
		if n := charts.Requests(archive); n != 1 {
			b.Fatalf("%d Applications of one chart, fetched twice: the archive was requested %d times, want once", len(apps), n)
		}
		indexRequests += charts.Requests("/index.yaml")
		archiveReqs += charts.Requests(archive)
	}
	perApp := float64(b.N * len(apps))
	b.ReportMetric(cold.Seconds()*1000/perApp, "cold-ms/app")
	b.ReportMetric(resync.Seconds()*1000/perApp, "resync-ms/app")
	b.ReportMetric(float64(resyncRenders)/float64(b.N), "resync-renders/op")
	b.ReportMetric(float64(indexRequests)/float64(b.N), "index-downloads/op")
	b.ReportMetric(float64(archiveReqs)/float64(b.N), "archive-downloads/op")
	b.ReportMetric(heapMB, "heap-MB")
	b.ReportMetric(heapGrowthMB, "heap-growth-MB")
}

// heapInUseMB is the heap in use after a GC, in MiB.
func heapInUseMB() float64 {
	runtime.GC()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	return float64(mem.HeapInuse) / (1 << 20)
}
