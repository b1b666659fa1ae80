package gitrepo

import (
	"context"
	"sync"
)

// flightGroup de-duplicates concurrent calls with the same key: the first
// caller starts the work, later callers wait for its result.
//
// Unlike a plain singleflight, the work does not run on the first caller's
// context: it runs on its own, which is cancelled only when every caller
// waiting for it has given up. So one caller timing out does not fail the
// others, and work nobody waits for any more stops.
type flightGroup[V any] struct {
	mu      sync.Mutex
	flights map[string]*flight[V]
}

type flight[V any] struct {
	done    chan struct{} // closed when val and err are set
	val     V
	err     error
	waiters int // guarded by flightGroup.mu
	cancel  context.CancelFunc
}

// do returns the result of fn for key, running fn unless a call for key is
// already in flight. It returns early with ctx's error if ctx ends first.
// The context passed to fn keeps ctx's values but not its deadline.
func (g *flightGroup[V]) do(ctx context.Context, key string, fn func(context.Context) (V, error)) (V, error) {
	g.mu.Lock()
	f, ok := g.flights[key]
	if !ok {
		if g.flights == nil {
			g.flights = map[string]*flight[V]{}
		}
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight[V]{done: make(chan struct{}), cancel: cancel}
		g.flights[key] = f
		go g.run(fctx, key, f, fn)
	}
	f.waiters++
	g.mu.Unlock()

	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		g.mu.Lock()
		f.waiters--
		if f.waiters == 0 {
			// Nobody wants the result: stop the work, and let the next
			// caller start afresh rather than join a cancelled flight.
			f.cancel()
			if g.flights[key] == f {
				delete(g.flights, key)
			}
		}
		g.mu.Unlock()
		var zero V
		return zero, ctx.Err()
	}
}

func (g *flightGroup[V]) run(ctx context.Context, key string, f *flight[V], fn func(context.Context) (V, error)) {
	val, err := fn(ctx)
	g.mu.Lock()
	if g.flights[key] == f {
		delete(g.flights, key)
	}
	f.val, f.err = val, err
	g.mu.Unlock()
	f.cancel()
	close(f.done)
}
