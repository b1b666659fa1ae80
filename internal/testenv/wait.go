package testenv

import (
	"testing"
	"time"
)

// DefaultTimeout is how long Eventually waits: generous for a loaded machine, yet well below
// the controller's Git poll (3 minutes by default), so nothing a test waits for can have been
// brought about by the poll.
const DefaultTimeout = time.Minute

// pollInterval is how often Eventually and Consistently evaluate their condition.
const pollInterval = 100 * time.Millisecond

// Eventually polls cond until it returns "" (the condition holds) or DefaultTimeout passes.
// Otherwise cond returns what it sees instead, and the test fails with what and the last such
// message: what a user would have seen.
func Eventually(t testing.TB, what string, cond func() string) {
	t.Helper()
	EventuallyWithin(t, DefaultTimeout, what, cond)
}

// EventuallyWithin is Eventually with another deadline, e.g. for waits on a timer of the
// controller that runs longer than DefaultTimeout allows for.
func EventuallyWithin(t testing.TB, within time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		last := cond()
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %s: %s", what, within, last)
		}
		time.Sleep(pollInterval)
	}
}

// Consistently checks that cond keeps returning "" for the whole window: the way to assert
// that something does not happen. It fails with what and cond's message as soon as cond
// returns one.
func Consistently(t testing.TB, window time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(window)
	for {
		if msg := cond(); msg != "" {
			t.Fatalf("%s: no longer true: %s", what, msg)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(pollInterval)
	}
}
