package templates

import (
	"sync"
	"sync/atomic"
	"text/template"
	"time"
)

// Budget bounds what rendering many Applications may cost together: the time it may take
// and the bytes it may make (the Applications, about as large as their JSON, and every value
// the template functions make, garbage included). The per-field and per-value limits bound
// one render; a Budget bounds a whole pass, since an ApplicationSet may render 10,000
// Applications. Expand gives every pass over an ApplicationSet a fresh Budget through
// Options.Budget, so that one ApplicationSet can neither hold a controller worker for long
// nor fill its memory.
//
// Only rendering is timed: Git reads and Cluster lists between renders do not count. The
// time of concurrent renders adds up. A Budget is safe for concurrent use.
type Budget struct {
	time  time.Duration
	bytes int64

	spentTime  atomic.Int64 // nanoseconds
	spentBytes atomic.Int64
	// deadline is when the render in progress must stop, in Unix nanoseconds; template
	// functions that take long (key generation, regular expressions) check it before they
	// start. With concurrent renders it is the latest one's.
	deadline atomic.Int64

	funcsOnce sync.Once
	funcs     template.FuncMap
}

// NewBudget returns a Budget of renderTime and bytes; zero means no limit.
func NewBudget(renderTime time.Duration, bytes int64) *Budget {
	return &Budget{time: renderTime, bytes: bytes}
}

// begin starts one render and returns when it started and when it must stop (zero without
// a time limit), or a *LimitError when the budget is already spent.
func (b *Budget) begin() (start, deadline time.Time, err error) {
	if b == nil {
		return time.Time{}, time.Time{}, nil
	}
	if b.bytes > 0 && b.spentBytes.Load() > b.bytes {
		return time.Time{}, time.Time{}, errRenderBytes(b.bytes)
	}
	if b.time <= 0 {
		return time.Time{}, time.Time{}, nil
	}
	start = time.Now()
	left := b.time - time.Duration(b.spentTime.Load())
	if left <= 0 {
		return time.Time{}, time.Time{}, errRenderTime(b.time)
	}
	deadline = start.Add(left)
	b.deadline.Store(deadline.UnixNano())
	return start, deadline, nil
}

// end finishes a render begun at start that made n bytes.
func (b *Budget) end(start time.Time, n int) error {
	if b == nil {
		return nil
	}
	if b.time > 0 {
		b.spentTime.Add(int64(time.Since(start)))
	}
	return b.charge(n)
}

// charge counts n bytes made, failing once the budget's bytes are spent.
func (b *Budget) charge(n int) error {
	if b == nil || b.bytes <= 0 {
		return nil
	}
	if b.spentBytes.Add(int64(n)) > b.bytes {
		return errRenderBytes(b.bytes)
	}
	return nil
}

// checkTime fails once the render in progress is past its deadline. Template functions that
// may take long call it before they start, since a function call cannot be interrupted.
func (b *Budget) checkTime() error {
	if b == nil || b.time <= 0 {
		return nil
	}
	if d := b.deadline.Load(); d != 0 && time.Now().UnixNano() > d {
		return errRenderTime(b.time)
	}
	return nil
}

// funcMap returns the template functions bound to b: those that make values charge them,
// those that take long check the time. It is built once per Budget.
func (b *Budget) funcMap() template.FuncMap {
	b.funcsOnce.Do(func() { b.funcs = boundedFuncs(b) })
	return b.funcs
}
