package testenv

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// recorder stands in for the testing.TB a helper fails: it records the failure and ends the
// goroutine, as t.Fatalf does.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls helper with a recorder in a goroutine of its own, which Fatalf may end, and
// returns the failure, if any.
func run(t *testing.T, helper func(testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		helper(r)
	}()
	<-done
	return r.failure
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	failure := run(t, func(tb testing.TB) {
		Eventually(tb, "the third call succeeds", func() string {
			if calls++; calls < 3 {
				return fmt.Sprintf("call %d", calls)
			}
			return ""
		})
	})
	if failure != "" || calls != 3 {
		t.Errorf("Eventually failed with %q after %d calls; want success on the third", failure, calls)
	}
}

func TestEventuallyFailsWithTheLastMessage(t *testing.T) {
	calls := 0
	failure := run(t, func(tb testing.TB) {
		EventuallyWithin(tb, 300*time.Millisecond, "the Application is created", func() string {
			calls++
			return fmt.Sprintf("call %d: no Application yet", calls)
		})
	})
	want := fmt.Sprintf("the Application is created: still not true after 300ms: call %d: no Application yet", calls)
	if failure != want {
		t.Errorf("Eventually failed with %q; want %q", failure, want)
	}
}

func TestConsistentlyFailsAtOnceWithTheMessage(t *testing.T) {
	calls := 0
	failure := run(t, func(tb testing.TB) {
		Consistently(tb, time.Hour, "nothing is deleted", func() string {
			if calls++; calls == 3 {
				return "b was deleted"
			}
			return ""
		})
	})
	if want := "nothing is deleted: no longer true: b was deleted"; failure != want || calls != 3 {
		t.Errorf("Consistently failed with %q after %d calls; want %q after the third", failure, calls, want)
	}
}

func TestConsistentlyChecksTheWholeWindow(t *testing.T) {
	const window = 300 * time.Millisecond
	start := time.Now()
	var last time.Time
	failure := run(t, func(tb testing.TB) {
		Consistently(tb, window, "nothing happens", func() string {
			last = time.Now()
			return ""
		})
	})
	if failure != "" {
		t.Fatalf("Consistently failed with %q although the condition always held", failure)
	}
	if checked := last.Sub(start); checked < window {
		t.Errorf("the last check was %s into a window of %s: the end of the window went unchecked", checked, window)
	}
}
