package membership

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// The observer judges a Lease by when it saw the Lease's version change on its own clock, so
// a holder whose clock is far off the observer's is neither taken over early nor kept forever.
func TestExpiryIsJudgedByTheObserversClock(t *testing.T) {
	const d = 15 * time.Second
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	o := newObserver()

	// The holder's clock is an hour behind: its renewTime looks long expired. A replica that
	// compared renewTime with its own now would take the Lease at once; the observer waits.
	obs := o.observe("navarch-cluster-a", "100", "replica-1", d, clock.Now())
	if obs.expired(clock.Now()) {
		t.Fatal("a Lease seen for the first time is expired at once")
	}
	clock.Step(d - time.Second)
	if o.observe("navarch-cluster-a", "100", "replica-1", d, clock.Now()).expired(clock.Now()) {
		t.Fatal("the Lease expired before its duration passed since it was first seen")
	}

	// A renewal (new version) restarts the wait, whatever renewTime it carries.
	clock.Step(500 * time.Millisecond)
	o.observe("navarch-cluster-a", "101", "replica-1", d, clock.Now())
	clock.Step(d - time.Millisecond)
	if o.observe("navarch-cluster-a", "101", "replica-1", d, clock.Now()).expired(clock.Now()) {
		t.Fatal("the Lease expired although it was renewed less than its duration ago")
	}
	clock.Step(time.Millisecond)
	if !o.observe("navarch-cluster-a", "101", "replica-1", d, clock.Now()).expired(clock.Now()) {
		t.Fatal("the Lease did not expire once its duration passed without a renewal")
	}

	// The holder's clock is an hour ahead: its renewTime looks valid for an hour, but once
	// the holder stops renewing the Lease expires after its duration all the same.
	o.observe("navarch-member-b", "7", "b", d, clock.Now())
	clock.Step(d)
	if !o.observe("navarch-member-b", "7", "b", d, clock.Now()).expired(clock.Now()) {
		t.Fatal("an unrenewed Lease did not expire after its duration")
	}

	// A Lease deleted and created again is judged from when it is seen anew.
	o.keepOnly(map[string]bool{"navarch-cluster-a": true})
	if o.observe("navarch-member-b", "7", "b", d, clock.Now()).expired(clock.Now()) {
		t.Fatal("a Lease seen again after it was gone kept its old observation")
	}
}
