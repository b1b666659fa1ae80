package engine

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/internal/project"
)

// A quiet pass found its Application Synced and Healthy with nothing to do and nothing to
// wait for but the next Git poll. The passes that only that poll's timer asks for are most of
// an idle fleet's work: when such a pass finds the same Application (resourceVersion), the
// same commit, Project and cluster connection, and no event of its objects nor any other
// request since the quiet one, it has nothing to compare: it ends at once, changing nothing.
// Anything else (an event, a refresh, a webhook, a Cluster or Project change, a new commit)
// makes a full pass.

// Settled tells the engine that the caller wrote what the pass that returned res produced
// (or that there was nothing to write): if that pass had nothing to do, the passes its timer
// asks for may now be quiet. Until then they compare again, so that a status write that
// failed is made again.
func (e *Engine) Settled(app types.NamespacedName, res Result) {
	if res.settled != nil {
		e.quiet.set(app, *res.settled, true)
	}
}

// quietPass is what a pass saw before comparing.
type quietPass struct {
	uid             types.UID
	resourceVersion string
	commit          string
	remote          *clustercache.Remote
	asked           uint64
	policy          *project.Policy
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
