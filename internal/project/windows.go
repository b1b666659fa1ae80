package project

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // sync windows name IANA zones, which an image without zoneinfo lacks

	"github.com/robfig/cron/v3"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// window is a compiled sync window.
type window struct {
	spec         *navarchv1.SyncWindow
	schedule     cron.Schedule
	duration     time.Duration
	location     *time.Location
	applications patterns
	namespaces   patterns
	clusters     patterns
}

// maxWindowSteps bounds the walk over a schedule's activations when windows overlap (a
// window opening every minute for an hour).
const maxWindowSteps = 10000

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func compileWindow(field string, w *navarchv1.SyncWindow) (window, error) {
	cw := window{spec: w, location: time.UTC}
	if w.Kind != navarchv1.SyncWindowAllow && w.Kind != navarchv1.SyncWindowDeny {
		return cw, fmt.Errorf("%s.kind: %q is neither allow nor deny", field, w.Kind)
	}
	if w.TimeZone != "" {
		loc, err := time.LoadLocation(w.TimeZone)
		if err != nil {
			return cw, fmt.Errorf("%s.timeZone: %w", field, err)
		}
		cw.location = loc
	}
	var err error
	if cw.schedule, err = cronParser.Parse(w.Schedule); err != nil {
		return cw, fmt.Errorf("%s.schedule: %q: %w", field, w.Schedule, err)
	}
	if cw.duration, err = time.ParseDuration(w.Duration); err != nil || cw.duration <= 0 {
		return cw, fmt.Errorf("%s.duration: %q is not a positive duration such as 1h or 30m", field, w.Duration)
	}
	if cw.applications, err = compilePatterns(field+".applications", w.Applications, nil); err != nil {
		return cw, err
	}
	if cw.namespaces, err = compilePatterns(field+".namespaces", w.Namespaces, nil); err != nil {
		return cw, err
	}
	cw.clusters, err = compilePatterns(field+".clusters", w.Clusters, nil)
	return cw, err
}

// appliesTo reports whether the window concerns the Application named name syncing to
// namespace on dest: its name, its destination namespace or its cluster (name or server)
// matches.
func (w *window) appliesTo(name, namespace string, dest Destination) bool {
	return w.applications.match(name) || w.namespaces.match(namespace) ||
		w.clusters.match(dest.Name) || (dest.Server != "" && w.clusters.match(dest.Server))
}

// openAt reports whether the window is open at t and, if so, until when; if not, when it
// opens next (zero if never).
func (w *window) openAt(t time.Time) (open bool, change time.Time) {
	t = t.In(w.location)
	start := w.schedule.Next(t.Add(-w.duration).Add(-time.Second))
	if start.IsZero() || start.After(t) {
		return false, w.schedule.Next(t)
	}
	end := start.Add(w.duration)
	for range maxWindowSteps {
		next := w.schedule.Next(start)
		if next.IsZero() || next.After(end) {
			break
		}
		start, end = next, next.Add(w.duration)
	}
	if !end.After(t) {
		return false, w.schedule.Next(t)
	}
	return true, end
}

func (w *window) String() string {
	var on []string
	for _, l := range []struct {
		name string
		list []string
	}{{"applications", w.spec.Applications}, {"namespaces", w.spec.Namespaces}, {"clusters", w.spec.Clusters}} {
		if len(l.list) > 0 {
			on = append(on, l.name+" "+strings.Join(l.list, ","))
		}
	}
	head := []string{w.spec.Duration}
	if w.spec.TimeZone != "" {
		head = append(head, w.spec.TimeZone)
	}
	return fmt.Sprintf("%s window %q (%s)", w.spec.Kind, w.spec.Schedule, strings.Join(append(head, on...), "; "))
}

// Gate is what the sync windows of a Project say about one Application now.
type Gate struct {
	// Automated is true when automated syncs (and rollouts) may start.
	Automated bool
	// Manual is true when manual syncs may start.
	Manual bool
	// Reason says which window stops syncs and until when; empty when nothing stops them.
	Reason string
	// Change is the next time at which a window of the Application opens or closes; zero
	// when none will.
	Change time.Time
}

// Gate evaluates the sync windows that concern the Application named name, syncing to
// namespace on dest, at now. The rules are Argo CD's: while a deny window is open nothing
// syncs, except manual syncs when every open deny window has manualSync; when allow windows
// concern the Application, automated syncs run only while one is open, and manual syncs
// outside them only when one of them has manualSync. Without windows everything may sync.
func (p *Policy) Gate(name, namespace string, dest Destination, now time.Time) Gate {
	g := Gate{Automated: true, Manual: true}
	var denies, openAllows, closedAllows []*window
	var denyEnd, allowOpens time.Time
	for i := range p.windows {
		w := &p.windows[i]
		if !w.appliesTo(name, namespace, dest) {
			continue
		}
		open, change := w.openAt(now)
		if !change.IsZero() && (g.Change.IsZero() || change.Before(g.Change)) {
			g.Change = change
		}
		switch {
		case open && w.spec.Kind == navarchv1.SyncWindowDeny:
			denies = append(denies, w)
			denyEnd = later(denyEnd, change)
		case open:
			openAllows = append(openAllows, w)
		case w.spec.Kind == navarchv1.SyncWindowAllow:
			closedAllows = append(closedAllows, w)
			if allowOpens.IsZero() || (!change.IsZero() && change.Before(allowOpens)) {
				allowOpens = change
			}
		}
	}
	switch {
	case len(denies) > 0:
		g.Automated = false
		g.Manual = true
		for _, w := range denies {
			g.Manual = g.Manual && w.spec.ManualSync
		}
		g.Reason = fmt.Sprintf("the %s of Project %s is open until %s", denies[0], p.Name, denyEnd.UTC().Format(time.RFC3339))
	case len(openAllows) == 0 && len(closedAllows) > 0:
		g.Automated = false
		g.Manual = false
		for _, w := range closedAllows {
			g.Manual = g.Manual || w.spec.ManualSync
		}
		opens := "never"
		if !allowOpens.IsZero() {
			opens = allowOpens.UTC().Format(time.RFC3339)
		}
		g.Reason = fmt.Sprintf("outside the allow windows of Project %s (the %s); the next opens at %s", p.Name, closedAllows[0], opens)
	}
	return g
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
