package membership

import (
	"time"
)

// observation is what one replica knows about one Lease: the version it last saw and when,
// by its own clock, it first saw that version.
//
// Expiry is judged by the observer's clock, never by the renewTime written in the Lease:
// renewTime was written with the holder's clock, which may be minutes off the observer's, so
// comparing it with the observer's now would let a fast observer take a Lease that is still
// held, or keep a slow one waiting forever. Instead a Lease is expired when its version has
// not changed for its whole leaseDurationSeconds as measured on the observer's own clock, from
// the moment the observer saw the current version (client-go's leader election judges its
// Lease the same way). Seeing a version happens after it was written, so the observer's wait
// never ends before the holder's own deadline, whatever the clocks say; the only assumption
// is that clocks run at about the same rate.
type observation struct {
	// version is the Lease's resourceVersion: every write, renewal or release, changes it.
	version string
	// at is when, by the observer's clock, it first saw version.
	at time.Time
	// holder is the Lease's holderIdentity ("" when free or released).
	holder string
	// duration is the Lease's leaseDurationSeconds.
	duration time.Duration
}

// expired reports whether, at now, the Lease has gone unrenewed for its whole duration.
func (o observation) expired(now time.Time) bool {
	return !now.Before(o.at.Add(o.duration))
}

// observer remembers the observations of a set of Leases. It is used by one goroutine.
type observer struct {
	seen map[string]observation // by Lease name
}

func newObserver() *observer { return &observer{seen: map[string]observation{}} }

// observe records that the Lease name was seen at now with version, holder and duration, and
// returns the observation: a new version restarts the clock, the same version keeps the time
// it was first seen.
func (o *observer) observe(name, version, holder string, duration time.Duration, now time.Time) observation {
	prev, ok := o.seen[name]
	if ok && prev.version == version {
		return prev
	}
	obs := observation{version: version, at: now, holder: holder, duration: duration}
	o.seen[name] = obs
	return obs
}

// keepOnly forgets the Leases not in names, e.g. deleted ones, so that a Lease created again
// under the same name is judged from when it is seen anew.
func (o *observer) keepOnly(names map[string]bool) {
	for name := range o.seen {
		if !names[name] {
			delete(o.seen, name)
		}
	}
}
