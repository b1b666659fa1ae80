package project

import (
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// WindowState is one sync window of a Project at a moment: whether it is open, and when that
// changes. The CLI shows it; the controllers ask Gate.
type WindowState struct {
	// Window is the window as the Project declares it.
	Window navarchv1.SyncWindow
	// Open is true while the window is open.
	Open bool
	// Change is when an open window closes, or when a closed one opens next; zero when a
	// closed window never opens again.
	Change time.Time
}

// Windows returns the state of each of the Project's sync windows at now, in the Project's
// order.
func (p *Policy) Windows(now time.Time) []WindowState {
	out := make([]WindowState, len(p.windows))
	for i := range p.windows {
		w := &p.windows[i]
		open, change := w.openAt(now)
		out[i] = WindowState{Window: *w.spec, Open: open, Change: change}
	}
	return out
}
