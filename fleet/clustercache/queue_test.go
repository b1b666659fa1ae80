package clustercache

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// recordingQueue is a queue whose passes record the Applications they ran, in order, and
// wait for release when one is set.
type recordingQueue struct {
	*queue
	wg      sync.WaitGroup
	mu      sync.Mutex
	ran     []types.NamespacedName
	passes  chan types.NamespacedName
	release chan struct{}
	during  func(key types.NamespacedName) // called in the pass, before release
}

func newRecordingQueue(workers int) *recordingQueue {
	rq := &recordingQueue{passes: make(chan types.NamespacedName, 100)}
	rq.queue = newQueue(workers, rq.run, rq.wg.Go)
	return rq
}

func (rq *recordingQueue) run(key types.NamespacedName) {
	if rq.during != nil {
		rq.during(key)
	}
	if rq.release != nil {
		<-rq.release
	}
	rq.mu.Lock()
	rq.ran = append(rq.ran, key)
	rq.mu.Unlock()
	rq.passes <- key
}

// next waits for the next pass to end.
func (rq *recordingQueue) next(t *testing.T) types.NamespacedName {
	t.Helper()
	select {
	case key := <-rq.passes:
		return key
	case <-time.After(5 * time.Second):
		t.Fatal("no pass within 5s")
		return types.NamespacedName{}
	}
}

// none checks that no pass ends within d.
func (rq *recordingQueue) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case key := <-rq.passes:
		t.Fatalf("%s ran, want no pass", key)
	case <-time.After(d):
	}
}

func app(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "apps", Name: name}
}

// Applications run in the order queued, each once however often it was queued while it waited.
func TestQueueRunsEachQueuedApplicationOnceInOrder(t *testing.T) {
	rq := newRecordingQueue(1)
	rq.release = make(chan struct{})
	rq.add(app("a")) // runs at once, held by release
	for _, name := range []string{"b", "c", "b", "d", "c"} {
		rq.add(app(name))
	}
	if got := rq.len(); got != 3 {
		t.Errorf("len is %d with b, c and d waiting, want 3", got)
	}
	close(rq.release)
	for _, want := range []string{"a", "b", "c", "d"} {
		if got := rq.next(t); got != app(want) {
			t.Fatalf("ran %s, want %s", got, app(want))
		}
	}
	rq.none(t, 100*time.Millisecond)
	rq.wg.Wait() // the worker returned with nothing ready
	if got := len(rq.items); got != 0 {
		t.Errorf("the queue holds %d entries at rest with nothing waiting, want 0", got)
	}
}

// An Application queued during its own pass runs once more after it, never in two passes at once.
func TestQueueRunsAnApplicationQueuedDuringItsPassAfterIt(t *testing.T) {
	rq := newRecordingQueue(4)
	var mu sync.Mutex
	inPass, overlapped, first := 0, false, true
	rq.during = func(types.NamespacedName) {
		mu.Lock()
		inPass++
		overlapped = overlapped || inPass > 1
		again := first
		first = false
		mu.Unlock()
		if again {
			rq.add(app("a")) // queued during its own pass
			rq.add(app("a"))
			time.Sleep(50 * time.Millisecond) // give a second worker the chance to take it
		}
		mu.Lock()
		inPass--
		mu.Unlock()
	}
	rq.add(app("a"))
	rq.next(t)
	rq.next(t)
	rq.none(t, 100*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if overlapped {
		t.Error("a ran in two passes at once")
	}
}

// At most workers passes run at once, and all queued Applications run.
func TestQueueRunsUpToWorkersAtOnce(t *testing.T) {
	const workers, apps = 3, 20
	rq := newRecordingQueue(workers)
	var mu sync.Mutex
	running, most := 0, 0
	rq.during = func(types.NamespacedName) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
	}
	for i := range apps {
		rq.add(app(fmt.Sprint(i)))
	}
	seen := map[types.NamespacedName]bool{}
	for range apps {
		seen[rq.next(t)] = true
	}
	if len(seen) != apps {
		t.Errorf("%d Applications ran, want %d", len(seen), apps)
	}
	rq.wg.Wait()
	if most != workers {
		t.Errorf("at most %d passes ran at once, want %d", most, workers)
	}
}

// An Application queued for later runs once its time has come, at the earliest time asked.
func TestQueueRunsAnApplicationAfterItsDelay(t *testing.T) {
	rq := newRecordingQueue(1) // one worker: the passes end in the order they started
	start := time.Now()
	rq.after(app("late"), 400*time.Millisecond)
	rq.after(app("soon"), time.Hour)
	rq.after(app("soon"), 200*time.Millisecond) // earlier: replaces the hour
	rq.after(app("soon"), time.Hour)            // later: ignored
	if got := rq.next(t); got != app("soon") {
		t.Fatalf("%s ran first, want soon", got)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Errorf("soon ran after %v, want 200ms or more", waited)
	}
	if got := rq.next(t); got != app("late") {
		t.Fatalf("%s ran second, want late", got)
	}
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Errorf("late ran after %v, want 400ms or more", waited)
	}
	rq.none(t, 300*time.Millisecond)
	rq.mu.Lock()
	defer rq.mu.Unlock()
	if len(rq.waiting) != 0 {
		t.Errorf("%d Applications still waiting, want none", len(rq.waiting))
	}
}

// Many delays come due in the order of their times, whatever the order they were asked in.
func TestQueueKeepsDelaysInTheirOrder(t *testing.T) {
	rq := newRecordingQueue(1)
	rq.release = make(chan struct{}) // hold the passes until every delay has come due
	delays := []int{7, 3, 9, 1, 5, 8, 2, 6, 4, 10}
	for _, d := range delays {
		rq.after(app(fmt.Sprint(d)), time.Duration(d)*20*time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	close(rq.release)
	for want := 1; want <= len(delays); want++ {
		if got := rq.next(t); got != app(fmt.Sprint(want)) {
			t.Fatalf("ran %s, want %d", got, want)
		}
	}
}

// A retried Application waits twice as long each time, until forget starts it over.
func TestQueueRetryBacksOff(t *testing.T) {
	rq := newRecordingQueue(1)
	a := app("a")
	// retry queues a for later; its delay lies between the times read before and after.
	retry := func() (shortest, longest time.Duration) {
		rq.mu.Lock()
		before := time.Since(rq.epoch)
		rq.mu.Unlock()
		rq.retry(a)
		rq.mu.Lock()
		defer rq.mu.Unlock()
		after := time.Since(rq.epoch)
		at := rq.waiting[rq.items[a].slot-1].at
		rq.popWaiting() // so that the next retry is not held by this one's time
		return at - after, at - before
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 32 * time.Second, 64 * time.Second, retryMax, retryMax}
	for i, w := range want {
		if shortest, longest := retry(); w < shortest || w > longest {
			t.Errorf("retry %d waits between %v and %v, want %v", i+1, shortest, longest, w)
		}
	}
	rq.forget(a)
	if shortest, longest := retry(); retryBase < shortest || retryBase > longest {
		t.Errorf("the first retry after forget waits between %v and %v, want %v", shortest, longest, retryBase)
	}
	rq.retry(a)
	rq.next(t) // and it runs
	rq.close()
}

// A closed queue starts nothing more: a queued Application, one coming due, and one queued
// during a pass are dropped; the pass running ends and its worker returns.
func TestQueueCloseStartsNothingMore(t *testing.T) {
	rq := newRecordingQueue(1)
	rq.release = make(chan struct{})
	rq.add(app("running"))
	rq.add(app("queued"))
	rq.after(app("due"), 50*time.Millisecond)
	rq.close()
	rq.add(app("late"))
	close(rq.release)
	if got := rq.next(t); got != app("running") {
		t.Fatalf("%s ran, want running (the pass started before close)", got)
	}
	rq.none(t, 200*time.Millisecond)
	rq.wg.Wait()
}
