package engine

import (
	"fmt"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// retryAfter returns how long to wait before the next retry of the running operation, if its
// retry strategy (the operation's own, or spec.syncPolicy.retry) allows one more.
func (e *Engine) retryAfter(app *navarchv1.Application) (time.Duration, bool) {
	state := app.Status.OperationState
	strategy := state.Operation.Retry
	if strategy == nil && app.Spec.SyncPolicy != nil {
		strategy = app.Spec.SyncPolicy.Retry
	}
	if strategy == nil || (strategy.Limit >= 0 && state.RetryCount >= strategy.Limit) {
		return 0, false
	}
	return backoff(strategy.Backoff, state.RetryCount), true
}

// backoff is the wait before retry n+1 (n retries made): min(maxDuration, duration·factorⁿ),
// with the defaults 5s, 2 and 3m.
func backoff(b *navarchv1.Backoff, n int64) time.Duration {
	duration, factor, maxDuration := 5*time.Second, int64(2), 3*time.Minute
	if b != nil {
		if d, ok := parseDuration(b.Duration); ok {
			duration = d
		}
		if b.Factor != nil && *b.Factor >= 1 {
			factor = *b.Factor
		}
		if d, ok := parseDuration(b.MaxDuration); ok {
			maxDuration = d
		}
	}
	wait := duration
	for range n {
		if wait >= maxDuration {
			break
		}
		wait *= time.Duration(factor)
	}
	return min(wait, maxDuration)
}

// parseDuration reads `5s`, `1m30s` or a bare number of seconds.
func parseDuration(s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, true
	}
	var secs float64
	if _, err := fmt.Sscanf(s, "%g", &secs); err == nil {
		return time.Duration(secs * float64(time.Second)), true
	}
	return 0, false
}
