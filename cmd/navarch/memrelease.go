package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/go-logr/logr"
)

// The runtime/metrics samples releaseAtRest reads.
const (
	heapAllocs = "/gc/heap/allocs:bytes"               // allocated since the process started
	heapLive   = "/gc/heap/live:bytes"                 // marked live by the last collection
	heapFree   = "/memory/classes/heap/free:bytes"     // free heap pages still held from the OS
	heapGone   = "/memory/classes/heap/released:bytes" // free heap pages returned to the OS
)

// heapSample is one reading of the heap's figures.
type heapSample struct {
	allocs, live, free, released uint64
}

func readHeap() heapSample {
	s := []metrics.Sample{{Name: heapAllocs}, {Name: heapLive}, {Name: heapFree}, {Name: heapGone}}
	metrics.Read(s)
	return heapSample{allocs: s[0].Value.Uint64(), live: s[1].Value.Uint64(), free: s[2].Value.Uint64(), released: s[3].Value.Uint64()}
}

// busy and quiet classify an interval by what the process allocated in it, against its live
// heap: a sync or a new commit allocates many times the live heap in half a minute; an idle
// fleet, its polls and probes, a small fraction of it.
func busy(prev, now heapSample) bool  { return now.allocs-prev.allocs >= now.live/2 }
func quiet(prev, now heapSample) bool { return now.allocs-prev.allocs < now.live/8 }

// The collector's goals, unless GOGC is set. Go's default, 100, collects each time the heap has
// grown by its live size. While it works, the controller collects at half that: its heap then
// stays smaller during a sync, so the Applications and watch-cache entries that outlive the
// sync are spread over fewer pages, which stay in use at rest (at 2,000 Applications: RSS at
// rest 100 MB against 124, the peak 142 MB against 184, for no more CPU that could be
// measured). At rest, a quarter: the controller allocates little then, and the garbage of
// metrics scrapes and probes does not grow the heap back.
const (
	workingGCPercent = 50
	restGCPercent    = 25
)

// releaseAtRest collects the garbage and returns the heap's free pages to the operating
// system when the controller comes to rest after a burst of work (a sync, a new commit), and
// collects more often while at rest, checking every interval until ctx ends. Otherwise Go
// keeps, at rest, the garbage of up to a live heap's worth of allocation before it collects,
// and free pages up to about the collector's goal, twice the live heap: tens of megabytes the
// controller no longer uses (docs/scaling.md). Unless GOGC is set, the goal is
// workingGCPercent from the start, restGCPercent at rest, and the first busy interval restores
// the working goal.
func releaseAtRest(ctx context.Context, log logr.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	r := heapReleaser{read: readHeap, release: debug.FreeOSMemory, log: log}
	if _, set := os.LookupEnv("GOGC"); !set {
		r.setGCPercent = debug.SetGCPercent
	}
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

// heapReleaser holds the reading before the current interval, whether a busy interval has
// come since the last release, and whether the collector's goal is the one at rest.
// setGCPercent is nil when the user chose the goal (GOGC).
type heapReleaser struct {
	read         func() heapSample
	release      func()
	setGCPercent func(int) int
	log          logr.Logger
	prev         heapSample
	worked       bool
	resting      bool
	workingGC    int // the goal the rest replaced
}

// start takes the first reading and sets the working goal, unless the user chose one.
func (r *heapReleaser) start() {
	if r.setGCPercent != nil {
		r.setGCPercent(workingGCPercent)
	}
	r.prev = r.read()
}

// check releases the free heap at the first quiet interval after a busy one (a collection
// and the return of every free page: a fraction of a second of CPU once per burst of work),
// and reports whether it did. The release sets the collector's goal at rest; a busy interval
// restores the working one.
func (r *heapReleaser) check() bool {
	now := r.read()
	if busy(r.prev, now) {
		r.worked = true
		if r.resting {
			r.setGCPercent(r.workingGC)
			r.resting = false
		}
	}
	released := r.worked && quiet(r.prev, now)
	if released {
		r.worked = false
		r.release()
		after := r.read()
		r.log.Info("Returned the free heap to the operating system at rest",
			"returnedBytes", int64(after.released)-int64(now.released), "liveBytes", after.live)
		now = after
		if r.setGCPercent != nil { // a release follows a busy interval, which ended any rest
			r.workingGC = r.setGCPercent(restGCPercent)
			r.resting = true
		}
	}
	r.prev = now
	return released
}
