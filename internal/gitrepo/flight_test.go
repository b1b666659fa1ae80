package gitrepo

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestFlightGroupSharesOneCall(t *testing.T) {
	var g flightGroup[int]
	var calls atomic.Int32
	release := make(chan struct{})
	const callers = 8
	var started, wg sync.WaitGroup
	results := make([]int, callers)
	started.Add(callers)
	for i := range callers {
		wg.Go(func() {
			started.Done()
			results[i], _ = g.do(t.Context(), "k", func(context.Context) (int, error) {
				calls.Add(1)
				<-release
				return 42, nil
			})
		})
	}
	started.Wait()
	// Give every caller time to join the flight before it lands.
	for g.waiters("k") < callers {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Errorf("fn ran %d times, want 1", calls.Load())
	}
	for i, v := range results {
		if v != 42 {
			t.Errorf("caller %d got %d", i, v)
		}
	}
	// The flight is over: the next call runs fn again.
	v, _ := g.do(t.Context(), "k", func(context.Context) (int, error) { return 7, nil })
	if v != 7 {
		t.Errorf("call after the flight got %d, want a fresh result", v)
	}
}

func TestFlightGroupCallerGivingUp(t *testing.T) {
	var g flightGroup[string]
	release := make(chan struct{})
	fn := func(ctx context.Context) (string, error) {
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}

	// One of two callers gives up: the other still gets the result.
	impatient, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { _, err := g.do(impatient, "k", fn); errc <- err }()
	for g.waiters("k") < 1 {
		time.Sleep(time.Millisecond)
	}
	resc := make(chan string, 1)
	go func() { v, _ := g.do(t.Context(), "k", fn); resc <- v }()
	for g.waiters("k") < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("impatient caller: %v, want context.Canceled", err)
	}
	close(release)
	if v := <-resc; v != "done" {
		t.Errorf("patient caller got %q, want done", v)
	}

	// The only caller gives up: the work is cancelled.
	ctx, cancel := context.WithCancel(t.Context())
	workCtx := make(chan context.Context, 1)
	block := func(ctx context.Context) (string, error) {
		workCtx <- ctx
		<-ctx.Done()
		return "", ctx.Err()
	}
	go func() { _, err := g.do(ctx, "k2", block); errc <- err }()
	wctx := <-workCtx
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("only caller: %v, want context.Canceled", err)
	}
	select {
	case <-wctx.Done():
	case <-time.After(10 * time.Second):
		t.Error("work not cancelled after its only caller gave up")
	}
}

// waiters reports how many callers wait for key, for tests.
func (g *flightGroup[V]) waiters(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, ok := g.flights[key]; ok {
		return f.waiters
	}
	return 0
}
