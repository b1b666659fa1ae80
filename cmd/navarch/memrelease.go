package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// The runtime/metrics samples releaseAtRest reads.
const (
	heapAllocs  = "/gc/heap/allocs:bytes"               // allocated since the process started
	heapLive    = "/gc/heap/live:bytes"                 // marked live by the last collection
	heapObjects = "/memory/classes/heap/objects:bytes"  // live objects and garbage not yet collected
	heapFree    = "/memory/classes/heap/free:bytes"     // free heap pages still held from the OS
	heapGone    = "/memory/classes/heap/released:bytes" // free heap pages returned to the OS
)

// heapSample is one reading of the heap's figures.
type heapSample struct {
	allocs, live, objects, free, released uint64
}

func readHeap() heapSample {
	s := []metrics.Sample{{Name: heapAllocs}, {Name: heapLive}, {Name: heapObjects}, {Name: heapFree}, {Name: heapGone}}
	metrics.Read(s)
	return heapSample{
		allocs: s[0].Value.Uint64(), live: s[1].Value.Uint64(), objects: s[2].Value.Uint64(),
		free: s[3].Value.Uint64(), released: s[4].Value.Uint64(),
	}
}

// reclaimable is what a release would return: the free heap still held from the operating
// system, and what was allocated since the last collection (at rest, nearly all of it garbage).
func (s heapSample) reclaimable() uint64 { return s.free + s.objects - min(s.live, s.objects) }

// busy and quiet classify an interval of length d by what the process allocated in it,
// against its live heap: a sync or a new commit allocates many times the live heap a minute
// (busy: at least that once a minute); an idle fleet, its polls and probes, a small fraction of
// it (quiet: less than a quarter of it a minute).
func busy(prev, now heapSample, d time.Duration) bool {
	return float64(now.allocs-prev.allocs) >= float64(now.live)*d.Minutes()
}

func quiet(prev, now heapSample, d time.Duration) bool {
	return float64(now.allocs-prev.allocs) < float64(now.live)*d.Minutes()/4
}

// releaseInterval is how often the controller reads its heap to decide whether to release it:
// the longest that free heap and garbage stay after a poll's passes have ended, before a release
// returns them.
const releaseInterval = 10 * time.Second

// gcPercent is the collector's goal, unless GOGC is set. Go's default, 100, collects each time
// the heap has grown by its live size; the controller collects at a quarter of that. Its heap
// then stays smaller during a sync, so the Applications and watch-cache entries that outlive
// the sync are spread over fewer pages, which stay in use at rest. At 10,000 Applications a
// quarter, against the half it collected at before, took the RSS at rest from 166–171 MB to
// 154 and the peak from 269–272 MB to 226, for 13–20 more CPU-seconds over the sync's 90–100
// (at 2,000, half against Go's default had taken the RSS at rest from 124 to 100 MB). At rest
// the controller allocates little, and the garbage of metrics scrapes and probes does not grow
// the heap back.
const gcPercent = 25

// setGCPercent sets the collector's goal to gcPercent, unless GOGC is set.
func setGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
}

// sampleHeapOnlyWhenServed turns off the sampling of allocations for Go's heap profile unless
// the profile is served (--pprof-bind-address) or godebug (GODEBUG) sets memprofilerate. Go
// samples an allocation every 512 KB on average whether or not anyone reads the profile, and
// keeps a record per sampled call stack for the life of the process: at 10,000 Applications,
// 2,563 stacks and a 1.4 MB table to find them, about 2.4 MB no one reads.
func sampleHeapOnlyWhenServed(served bool, godebug string) {
	if served || godebugSets(godebug, "memprofilerate") {
		return
	}
	runtime.MemProfileRate = 0
}

// godebugSets reports whether godebug, GODEBUG's comma-separated key=value settings, sets key.
func godebugSets(godebug, key string) bool {
	for setting := range strings.SplitSeq(godebug, ",") {
		if k, _, _ := strings.Cut(strings.TrimSpace(setting), "="); k == key {
			return true
		}
	}
	return false
}

// releaseAtRest collects the garbage and returns the heap's free pages to the operating
// system when the controller comes to rest after a burst of work (a sync, a new commit),
// checking every interval until ctx ends. Otherwise Go keeps free pages, at rest, up to about
// the collector's goal: megabytes the controller no longer uses (docs/scaling.md).
func releaseAtRest(ctx context.Context, log logr.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	r := heapReleaser{read: readHeap, release: debug.FreeOSMemory, log: log, interval: interval}
	r.start()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.check()
		}
	}
}

// restReclaimable is what a quiet interval may find reclaimable (free heap and garbage) without
// a release. At rest Go collects only when the polls and probes have allocated a quarter of the
// live heap, and keeps the pages it freed until the next collection's end: at 10,000
// Applications the fleet benchmark read 2–16 MB of free heap and 5–7 MB of garbage at rest. So
// a quiet interval that finds more than this returns it: about one collection a minute at 10,000
// Applications (about 0.1 CPU-second each), rarer in smaller fleets, which allocate less.
const restReclaimable = 2 << 20

// heapReleaser holds the reading before the current interval, and whether a busy interval has
// come since the last release.
type heapReleaser struct {
	read     func() heapSample
	release  func()
	log      logr.Logger
	interval time.Duration // between checks
	prev     heapSample
	worked   bool
}

// start takes the first reading.
func (r *heapReleaser) start() { r.prev = r.read() }

// check releases the free heap at the first quiet interval after a busy one, and at a quiet
// interval that finds restReclaimable or more free heap and garbage (a collection and the return
// of every free page: a fraction of a second of CPU once per burst of work, and at most once per
// interval at rest), and reports whether it did.
func (r *heapReleaser) check() bool {
	now := r.read()
	if busy(r.prev, now, r.interval) {
		r.worked = true
	}
	released := quiet(r.prev, now, r.interval) && (r.worked || now.reclaimable() >= restReclaimable)
	if released {
		log := r.log // after a burst of work; at rest, every few minutes, in the debug log
		if !r.worked {
			log = r.log.V(1)
		}
		r.worked = false
		r.release()
		after := r.read()
		log.Info("Returned the free heap to the operating system at rest",
			"returnedBytes", int64(after.released)-int64(now.released), "liveBytes", after.live)
		now = after
	}
	r.prev = now
	return released
}
