package clustercache

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Retry backoff of a failed pass: half a second, doubled on each failure up to two minutes,
// as controller-runtime retries its reconciles.
const (
	retryBase = 500 * time.Millisecond
	retryMax  = 2 * time.Minute
)

// queue is a Cluster's queue of Applications and the goroutines that work it, with the rules
// of client-go's work queues: an Application waits in it at most once and is never in two
// passes at once; queued again during its pass, it runs once more after that pass; queued for
// later (after), it runs at the earliest time asked; retried (retry), it waits twice as long
// each time until forget.
//
// At rest it costs its Cluster one map entry and one heap entry per Application and one timer,
// and no goroutine: a worker starts when an Application is ready and fewer than workers run,
// and ends when none is ready. client-go's rate-limiting queue kept, per Cluster, a goroutine
// for its delayed adds with a channel of 1,000 slots, an allocated heap entry per Application,
// and sets holding as many slots as the Cluster's largest backlog ever queued; dispatching its
// items took a second goroutine (docs/scaling.md).
type queue struct {
	workers int
	pass    func(types.NamespacedName) // runs one pass of an Application
	spawn   func(func())               // starts a worker goroutine

	mu      sync.Mutex
	closed  bool
	running int                    // worker goroutines
	ready   []types.NamespacedName // in the order queued
	waiting []waitingItem          // a heap: the earliest first
	items   map[types.NamespacedName]itemState
	epoch   time.Time     // the origin of the waiting items' times (monotonic)
	timer   *time.Timer   // fires at timerAt, the earliest waiting item's time
	timerAt time.Duration // since epoch
}

// itemState is what the queue knows of one Application; the zero value is one it holds nothing
// for, which has no entry.
type itemState struct {
	flags    itemFlags
	failures uint8 // retries since the last forget, up to maxFailures
	slot     int32 // 1 + its index in waiting, 0 when not waiting
}

type itemFlags uint8

const (
	queued itemFlags = 1 << iota // in ready, or to be once its pass ends
	inPass                       // a worker runs it
)

// maxFailures is the count of retries from which the backoff is retryMax.
const maxFailures = 8 // retryBase << 8 is 128 s

type waitingItem struct {
	key types.NamespacedName
	at  time.Duration // since epoch
}

// newQueue returns a queue that runs up to workers passes at once, each in a goroutine that
// spawn starts.
func newQueue(workers int, pass func(types.NamespacedName), spawn func(func())) *queue {
	return &queue{
		workers: workers,
		pass:    pass,
		spawn:   spawn,
		items:   map[types.NamespacedName]itemState{},
		epoch:   time.Now(),
	}
}

// add queues key, unless it is queued already.
func (q *queue) add(key types.NamespacedName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(key)
	q.startLocked()
}

func (q *queue) addLocked(key types.NamespacedName) {
	if q.closed {
		return
	}
	s := q.items[key]
	if s.flags&queued != 0 {
		return
	}
	s.flags |= queued
	q.items[key] = s
	if s.flags&inPass == 0 {
		q.ready = append(q.ready, key)
	}
}

// after queues key once d has passed, unless it waits already for an earlier time.
func (q *queue) after(key types.NamespacedName, d time.Duration) {
	if d <= 0 {
		q.add(key)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.afterLocked(key, d)
}

func (q *queue) afterLocked(key types.NamespacedName, d time.Duration) {
	if q.closed {
		return
	}
	at := time.Since(q.epoch) + d
	s := q.items[key]
	if s.slot == 0 {
		q.waiting = append(q.waiting, waitingItem{key: key, at: at})
		s.slot = int32(len(q.waiting))
		q.items[key] = s
		q.up(len(q.waiting) - 1)
	} else if i := int(s.slot - 1); at < q.waiting[i].at {
		q.waiting[i].at = at
		q.up(i)
	}
	q.armLocked()
}

// retry queues key after its backoff, which doubles with each retry until forget.
func (q *queue) retry(key types.NamespacedName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	s := q.items[key]
	d := retryMax
	if s.failures < maxFailures {
		d = min(retryBase<<s.failures, retryMax)
		s.failures++
	}
	q.items[key] = s
	q.afterLocked(key, d)
}

// forget resets key's backoff.
func (q *queue) forget(key types.NamespacedName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	s, ok := q.items[key]
	if !ok {
		return
	}
	s.failures = 0
	q.setLocked(key, s)
}

// setLocked records s, dropping the entry of an Application the queue holds nothing for.
func (q *queue) setLocked(key types.NamespacedName, s itemState) {
	if s == (itemState{}) {
		delete(q.items, key)
		return
	}
	q.items[key] = s
}

// len is the count of Applications ready and waiting for a worker.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ready)
}

// close ends the queue: nothing is queued or started any more, and each worker returns when
// its pass ends. Once close has returned, spawn is not called again.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.ready = nil
	if q.timer != nil {
		q.timer.Stop()
	}
}

// startLocked starts workers for the ready Applications, up to workers in all.
func (q *queue) startLocked() {
	for !q.closed && q.running < q.workers && len(q.ready) > 0 {
		key := q.takeLocked()
		q.running++
		q.spawn(func() { q.work(key) })
	}
}

// work runs passes, starting with key's, until none is ready.
func (q *queue) work(key types.NamespacedName) {
	for {
		q.pass(key)
		var more bool
		if key, more = q.next(key); !more {
			return
		}
	}
}

// next ends done's pass and takes the next ready Application, or reports that the worker is
// to return.
func (q *queue) next(done types.NamespacedName) (types.NamespacedName, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		q.running--
		return types.NamespacedName{}, false
	}
	s := q.items[done]
	s.flags &^= inPass
	q.setLocked(done, s)
	if s.flags&queued != 0 { // queued again during its pass
		q.ready = append(q.ready, done)
	}
	if len(q.ready) == 0 {
		q.running--
		q.ready = nil // the backlog's array goes with it
		return types.NamespacedName{}, false
	}
	return q.takeLocked(), true
}

// takeLocked hands the first ready Application to a pass.
func (q *queue) takeLocked() types.NamespacedName {
	key := q.ready[0]
	q.ready[0] = types.NamespacedName{}
	q.ready = q.ready[1:]
	s := q.items[key]
	s.flags = s.flags&^queued | inPass
	q.items[key] = s
	return key
}

// fire queues the waiting Applications whose time has come.
func (q *queue) fire() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	now := time.Since(q.epoch)
	for len(q.waiting) > 0 && q.waiting[0].at <= now {
		key := q.popWaiting()
		q.addLocked(key)
	}
	q.timerAt = 0
	q.armLocked()
	q.startLocked()
}

// armLocked sets the timer for the earliest waiting Application.
func (q *queue) armLocked() {
	if len(q.waiting) == 0 {
		return // a timer set before fires and finds nothing
	}
	next := q.waiting[0].at
	if q.timerAt == next {
		return
	}
	q.timerAt = next
	d := next - time.Since(q.epoch)
	if q.timer == nil {
		q.timer = time.AfterFunc(d, q.fire)
		return
	}
	q.timer.Reset(d)
}

// popWaiting removes the earliest waiting Application from the heap.
func (q *queue) popWaiting() types.NamespacedName {
	last := len(q.waiting) - 1
	q.swap(0, last)
	key := q.waiting[last].key
	q.waiting[last] = waitingItem{}
	q.waiting = q.waiting[:last]
	if last > 0 {
		q.down(0)
	}
	s := q.items[key]
	s.slot = 0
	q.items[key] = s
	return key
}

func (q *queue) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if q.waiting[parent].at <= q.waiting[i].at {
			return
		}
		q.swap(i, parent)
		i = parent
	}
}

func (q *queue) down(i int) {
	n := len(q.waiting)
	for {
		least := i
		for _, child := range [2]int{2*i + 1, 2*i + 2} {
			if child < n && q.waiting[child].at < q.waiting[least].at {
				least = child
			}
		}
		if least == i {
			return
		}
		q.swap(i, least)
		i = least
	}
}

// swap exchanges two heap entries and records their new places.
func (q *queue) swap(i, j int) {
	if i == j {
		return
	}
	q.waiting[i], q.waiting[j] = q.waiting[j], q.waiting[i]
	for _, k := range [2]int{i, j} {
		s := q.items[q.waiting[k].key]
		s.slot = int32(k + 1)
		q.items[q.waiting[k].key] = s
	}
}
