package engine

import (
	"context"
	"strings"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// pruneTask deletes an object that left Git, unless it says Prune=false (skipped), or
// Prune=confirm and the Application carries no confirmation (the operation waits for the
// annotation, whose change is a watch event of the Application).
func (op *operation) pruneTask(ctx context.Context, t *task) (outcome, error) {
	switch strings.ToLower(t.res.options["Prune"]) {
	case "false":
		op.e.record(op.state, t, navarchv1.ResultPruneSkipped, "Prune=false")
		return proceed(), nil
	case "confirm":
		if _, ok := op.app.Annotations[navarchv1.AnnotationPruneConfirmed]; !ok {
			return waitEvent(waitPruneConfirmation, "waiting for confirmation to prune "+t.res.ref.Kind+" "+t.res.ref.Name+
				" (Prune=confirm): annotate the Application with "+navarchv1.AnnotationPruneConfirmed), nil
		}
	}
	if _, err := op.e.remove(ctx, op.remote, t.res, propagation(op.opts)); err != nil {
		if transient(err) {
			return outcome{}, err
		}
		op.e.record(op.state, t, navarchv1.ResultSyncFailed, err.Error())
		return failure(err.Error()), nil
	}
	op.e.record(op.state, t, navarchv1.ResultPruned, "pruned")
	return proceed(), nil
}
