package engine

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/project"
)

// A quiet pass found its Application Synced and Healthy with nothing to do and nothing to
// wait for but the next Git poll. The passes that only that poll's timer asks for are most of
// an idle fleet's work: when such a pass finds the same Application (resourceVersion), the
// same commit, rendered from the same remote bases and chart dependencies, the same Project
// and cluster connection, and no event of its objects nor any other request since the quiet
// one, it has nothing to compare: it ends at once, changing nothing. Anything else (an event,
// a refresh, a webhook, a Cluster or Project change, a new commit, a remote base's branch or a
// chart dependency's range that moved) makes a full pass.

// Settled tells the engine that the caller wrote what the pass that returned res produced
// (or that there was nothing to write): if that pass had nothing to do, the passes its timer
// asks for may now be quiet. Until then they compare again, so that a status write that
// failed is made again.
func (e *Engine) Settled(app types.NamespacedName, res Result) {
	if res.settled != nil {
		e.quiet.set(app, *res.settled, true)
	}
}

// QuietAgain says whether a pass of app on dest would end at once, as quiet: app's last pass
// was quiet and this one sees what it saw. It only reads app, so the caller may pass the
// cache's object without a deep copy; when it says no, the caller makes a full pass
// (Reconcile). An idle fleet's passes are nearly all quiet, and this spares each the copy of
// its Application and the reads of a full pass.
func (e *Engine) QuietAgain(ctx context.Context, app *navarchv1.Application, dest *clustercache.Remote) (time.Duration, bool) {
	key := types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
	pass := passOf(key, app, dest)
	last, ok := e.quiet.may(key, pass)
	if !ok {
		return 0, false // no need to look up the commit: something else changed
	}
	remote := clusterOf(dest)
	pol, err := e.policyOf(ctx, app, remote)
	if err != nil {
		return 0, false
	}
	var seen source.Manifests
	if last.dependencies == "" {
		// The rendering read nothing beyond the sources: their revisions tell whether it would
		// be another, without reading the renderings' cache.
		if seen.Commit, seen.NextPoll, err = e.revision(ctx, app); err != nil {
			return 0, false
		}
	} else {
		manifests, err := e.fetch(ctx, app, remote, pol, nil, nil, false)
		if err != nil {
			return 0, false
		}
		seen = *manifests
	}
	pass.saw(&seen, pol)
	if !e.stillQuiet(key, pass) {
		return 0, false
	}
	return seen.NextPoll, true
}

// revision is the revision of app's sources, and how long until the next poll (see
// source.Fetcher.Revision).
func (e *Engine) revision(ctx context.Context, app *navarchv1.Application) (string, time.Duration, error) {
	sources := app.Spec.Sources
	var one [1]navarchv1.ApplicationSource
	if len(sources) == 0 {
		one[0] = app.Spec.Source
		sources = one[:]
	}
	return e.opts.Source.Revision(ctx, source.Request{Sources: sources})
}

// stillQuiet says whether app's last pass was quiet and saw what p saw, counting the pass as
// quiet if so.
func (e *Engine) stillQuiet(app types.NamespacedName, p quietPass) bool {
	if !e.quiet.same(app, p) {
		return false
	}
	quietPassCounter(p.remote.Name).Inc()
	return true
}

// quietPass is what a pass saw before comparing.
type quietPass struct {
	uid             types.UID
	resourceVersion string
	commit          string
	dependencies    string // source.Manifests.Dependencies: remote bases and charts moved
	remote          *clustercache.Remote
	asked           uint64
	policy          *project.Policy
}

// passOf starts the record of a pass of app (named key) on dest: what it sees before its
// Project and sources are read.
func passOf(key types.NamespacedName, app *navarchv1.Application, dest *clustercache.Remote) quietPass {
	return quietPass{uid: app.UID, resourceVersion: app.ResourceVersion, remote: dest, asked: dest.Asked(key)}
}

// saw completes the record with the commit of the pass's sources, what their rendering read
// beyond them (a remote base's branch that moved renders other objects from the same commit),
// and its Project's policy.
func (p *quietPass) saw(m *source.Manifests, pol *policy) {
	p.commit, p.dependencies = m.Commit, m.Dependencies
	if pol != nil {
		p.policy = pol.Policy
	}
}

// quietPasses holds each Application's last quiet pass.
type quietPasses struct {
	mu sync.Mutex
	m  map[types.NamespacedName]quietPass
}

// same reports whether app's last pass was quiet and saw what p sees; if not, the pass that
// follows is a full one, and the quiet pass is forgotten.
func (q *quietPasses) same(app types.NamespacedName, p quietPass) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	last, ok := q.m[app]
	if ok && last == p {
		return true
	}
	delete(q.m, app)
	return false
}

// may reports whether app's last pass was quiet and saw what p sees so far (p's commit,
// dependencies and policy aside), leaving the record for same, and returns that record.
func (q *quietPasses) may(app types.NamespacedName, p quietPass) (quietPass, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	last, ok := q.m[app]
	p.commit, p.dependencies, p.policy = last.commit, last.dependencies, last.policy
	return last, ok && last == p
}

// set records p as app's last quiet pass, or forgets it when the pass was not quiet.
func (q *quietPasses) set(app types.NamespacedName, p quietPass, quiet bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !quiet {
		delete(q.m, app)
		return
	}
	if q.m == nil {
		q.m = map[types.NamespacedName]quietPass{}
	}
	q.m[app] = p
}

// quiet says whether a full pass that compared cmp and returned res for app left it with
// nothing to do, and nothing to wait for but the poll at nextPoll: no operation, no request,
// no sync window that opens or closes, Synced and Healthy without problems.
func quiet(app *navarchv1.Application, cmp *comparison, res Result, gate project.Gate, nextPoll time.Duration) bool {
	state := app.Status.OperationState
	return app.Operation == nil && (state == nil || state.Phase != navarchv1.OperationRunning) &&
		res.RequeueAfter == nextPoll && gate.Change.IsZero() && !res.ClearOperation && len(res.Annotations) == 0 &&
		cmp.sync == navarchv1.SyncStatusSynced && cmp.health.Status == navarchv1.HealthHealthy &&
		len(cmp.errors) == 0 && len(cmp.shared) == 0
}
