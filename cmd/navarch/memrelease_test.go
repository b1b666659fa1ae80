package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// The release waits for a quiet interval after a busy one, and does not repeat until the
// next busy one, unless a quiet interval finds restReclaimable or more free heap and garbage (a
// collection at rest freed pages, or the polls and probes left garbage): readings from a fleet
// of 120 MB of live heap.
func TestTheReleaseFollowsEachBurstOfWork(t *testing.T) {
	const mb = 1 << 20
	const live = 120 * mb
	var allocs, garbage, free uint64
	releases := 0
	r := heapReleaser{
		read:     func() heapSample { return heapSample{allocs: allocs, live: live, objects: live + garbage, free: free} },
		release:  func() { releases++ },
		log:      logr.Discard(),
		interval: 30 * time.Second,
	}
	r.start()
	for i, step := range []struct {
		allocated, garbage, free uint64
		wantRelease              bool
	}{
		{10 * mb, 1 * mb, 0, false},          // idle since the start: little to give back
		{2000 * mb, 60 * mb, 30 * mb, false}, // a sync
		{40 * mb, 20 * mb, 20 * mb, false},   // its tail: neither busy nor quiet
		{5 * mb, 5 * mb, 20 * mb, true},      // at rest
		{1 * mb, 1 * mb, 0, false},           // still at rest: already released
		{14 * mb, 0, 1 * mb, false},          // a poll's quiet passes, collected, a little free heap
		{1 * mb, 1 * mb, 5 * mb, true},       // a collection at rest freed more than restReclaimable
		{1 * mb, 1 * mb, 0, false},           // released
		{2 * mb, 3 * mb, 0, true},            // the garbage of probes and scrapes, more than restReclaimable
		{900 * mb, 40 * mb, 40 * mb, false},  // a commit
		{40 * mb, 30 * mb, 9 * mb, false},    // its tail: not quiet, however much is free
		{1 * mb, 1 * mb, 9 * mb, true},       // at rest again
	} {
		allocs += step.allocated
		garbage, free = step.garbage, step.free
		before := releases
		if got := r.check(); got != step.wantRelease || releases-before != map[bool]int{true: 1}[step.wantRelease] {
			t.Errorf("interval %d (%d MiB allocated, %d MiB garbage, %d MiB free): check = %v after %d releases, want %v",
				i, step.allocated/mb, step.garbage/mb, step.free/mb, got, releases-before, step.wantRelease)
		}
	}
}

// The readings and the release are the runtime's own: a burst's garbage is collected and its
// pages go back to the operating system at the first quiet check.
func TestAReleaseReturnsABurstsPages(t *testing.T) {
	// With the collector's goal off, Go neither collects nor returns pages by itself, so only
	// the release does.
	goal := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(goal) })
	runtime.GC()
	r := heapReleaser{read: readHeap, release: debug.FreeOSMemory, log: logr.Discard(), interval: releaseInterval}
	r.start()

	if n := allocate(128); n != 128 {
		t.Fatalf("allocated %d MiB, want 128", n)
	}
	if r.check() {
		t.Fatal("the check right after the burst released, want none while allocating")
	}
	before := readHeap()
	if !r.check() {
		t.Fatal("the first quiet check did not release")
	}
	after := readHeap()
	if returned := int64(after.released) - int64(before.released); returned < 64<<20 {
		t.Errorf("the release returned %d MiB to the operating system, want the burst's 128 MiB", returned>>20)
	}
	if after.free >= 16<<20 {
		t.Errorf("after the release the heap holds %d MiB free, want under 16 MiB", after.free>>20)
	}
}

// allocate allocates n MiB, garbage once it returns, and reports how many it allocated.
func allocate(n int) int {
	chunks := make([][]byte, n)
	for i := range chunks {
		chunks[i] = make([]byte, 1<<20)
	}
	return len(chunks)
}

func TestTheHeapIsSampledOnlyWhenItsProfileIsServed(t *testing.T) {
	rate := runtime.MemProfileRate
	t.Cleanup(func() { runtime.MemProfileRate = rate })
	for _, c := range []struct {
		served  bool
		godebug string
		want    int
	}{
		{served: false, godebug: "", want: 0},
		{served: false, godebug: "madvdontneed=1,gctrace=1", want: 0},
		{served: false, godebug: "memprofilerateish=1", want: 0},
		{served: true, godebug: "", want: 4096},
		{served: false, godebug: "gctrace=1, memprofilerate=2048", want: 4096},
	} {
		runtime.MemProfileRate = 4096
		sampleHeapOnlyWhenServed(c.served, c.godebug)
		if runtime.MemProfileRate != c.want {
			t.Errorf("served %v, GODEBUG %q: MemProfileRate %d, want %d", c.served, c.godebug, runtime.MemProfileRate, c.want)
		}
	}
}
