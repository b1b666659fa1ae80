package repo

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

// waiters returns how many callers wait for the call of key.
func (g *flight[T]) waiters(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.calls[key]; ok {
		return c.waiters
	}
	return 0
}

// awaitWaiters yields until n callers wait for key.
func awaitWaiters[T any](t *testing.T, g *flight[T], key string, n int) {
	t.Helper()
	for g.waiters(key) < n {
		if t.Context().Err() != nil {
			t.Fatalf("never saw %d callers waiting", n)
		}
		runtime.Gosched()
	}
}

func TestFlightSharesOneCall(t *testing.T) {
	var g flight[int]
	var calls atomic.Int32
	release := make(chan struct{})
	fn := func(context.Context) (int, error) { //nolint:unparam // the signature flight.do takes
		calls.Add(1)
		<-release
		return 42, nil
	}
	results := make(chan int, 5)
	for range 5 {
		go func() {
			v, err := g.do(t.Context(), "k", fn)
			if err != nil {
				t.Error(err)
			}
			results <- v
		}()
	}
	awaitWaiters(t, &g, "k", 5)
	close(release)
	for range 5 {
		if v := <-results; v != 42 {
			t.Errorf("got %d, want 42", v)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("fn ran %d times, want once", n)
	}
}

func TestFlightOutlivesTheCallerThatStartedIt(t *testing.T) {
	var g flight[string]
	started, release := make(chan struct{}), make(chan struct{})
	fn := func(ctx context.Context) (string, error) {
		close(started)
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	firstCtx, cancelFirst := context.WithCancel(t.Context())
	firstErr := make(chan error, 1)
	go func() {
		_, err := g.do(firstCtx, "k", fn)
		firstErr <- err
	}()
	<-started
	second := make(chan string, 1)
	go func() {
		v, err := g.do(t.Context(), "k", fn)
		if err != nil {
			t.Error(err)
		}
		second <- v
	}()
	awaitWaiters(t, &g, "k", 2)

	cancelFirst()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the caller that gave up got %v, want %v", err, context.Canceled)
	}
	close(release)
	if v := <-second; v != "done" {
		t.Errorf("the caller still waiting got %q, want the result", v)
	}
}

func TestFlightIsCancelledWhenEveryCallerLeaves(t *testing.T) {
	var g flight[string]
	started, sawCancel := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := g.do(ctx, "k", func(ctx context.Context) (string, error) {
			close(started)
			<-ctx.Done()
			close(sawCancel)
			return "", ctx.Err()
		})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("do: %v, want %v", err, context.Canceled)
	}
	<-sawCancel // the work was told to stop

	// The next caller starts afresh instead of joining the cancelled call.
	v, err := g.do(t.Context(), "k", func(context.Context) (string, error) { return "again", nil })
	if err != nil || v != "again" {
		t.Errorf("do after cancellation = %q, %v; want a new call", v, err)
	}
}
