package engine

import (
	"slices"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// result returns the recorded result of a task in the current attempt, if any.
func (e *Engine) result(state *navarchv1.OperationState, t *task) *navarchv1.ResourceResult {
	if i := resultIndex(state, t); i >= 0 {
		return &state.SyncResult.Resources[i]
	}
	return nil
}

// resultIndex returns the index of a task's result in the current attempt, or -1.
func resultIndex(state *navarchv1.OperationState, t *task) int {
	return slices.IndexFunc(state.SyncResult.Resources, func(res navarchv1.ResourceResult) bool {
		return sameObject(res.ResourceRef, t.res.ref) && res.SyncPhase == t.phase && (res.HookType != "") == t.isHook()
	})
}

// done reports whether a task has finished successfully in this attempt.
func (e *Engine) done(state *navarchv1.OperationState, t *task) bool {
	res := e.result(state, t)
	switch {
	case res == nil:
		return false
	case t.isHook():
		return res.HookPhase == navarchv1.HookSucceeded
	default:
		return res.Status != navarchv1.ResultSyncFailed
	}
}

// record stores the result of a task.
func (e *Engine) record(state *navarchv1.OperationState, t *task, code navarchv1.ResultCode, message string) {
	e.store(state, t, navarchv1.ResourceResult{
		ResourceRef: t.res.ref, Status: code, Message: truncate(message, 512), SyncPhase: t.phase, SyncWave: t.wave,
	})
}

// recordHook stores the state of a hook task.
func (e *Engine) recordHook(state *navarchv1.OperationState, t *task, phase navarchv1.HookPhase, message string) {
	code := navarchv1.ResultSynced
	if phase == navarchv1.HookFailed || phase == navarchv1.HookError {
		code = navarchv1.ResultSyncFailed
	}
	e.store(state, t, navarchv1.ResourceResult{
		ResourceRef: t.res.ref, Status: code, Message: truncate(message, 512), SyncPhase: t.phase, SyncWave: t.wave,
		HookType: string(t.phase), HookPhase: phase,
	})
}

func (e *Engine) store(state *navarchv1.OperationState, t *task, result navarchv1.ResourceResult) {
	if res := e.result(state, t); res != nil {
		*res = result
		return
	}
	state.SyncResult.Resources = append(state.SyncResult.Resources, result)
}

// changedCluster reports whether the current attempt has changed the cluster: applied or
// pruned an object, or created a hook instance. While an operation runs, its results record
// only such changes (and prunes it skipped): objects that ApplyOutOfSyncOnly leaves alone are
// recorded once it has succeeded.
func changedCluster(state *navarchv1.OperationState) bool {
	for _, r := range state.SyncResult.Resources {
		if r.HookPhase != "" || r.Status == navarchv1.ResultSynced || r.Status == navarchv1.ResultPruned {
			return true
		}
	}
	return false
}

func sameObject(a, b navarchv1.ResourceRef) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}
