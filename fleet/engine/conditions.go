package engine

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
)

func setCondition(app *navarchv1.Application, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: truncate(message, 32768), ObservedGeneration: app.Generation,
	})
}

func removeCondition(app *navarchv1.Application, typ string) {
	meta.RemoveStatusCondition(&app.Status.Conditions, typ)
}

// setReady derives the kstatus-style Ready and Reconciling conditions from the rest of the
// status: Ready when Synced and Healthy with no error; Reconciling while an operation runs.
func setReady(app *navarchv1.Application) {
	st := &app.Status
	running := st.OperationState != nil && st.OperationState.Phase == navarchv1.OperationRunning
	if running {
		setCondition(app, navarchv1.ConditionReconciling, metav1.ConditionTrue, navarchv1.ReasonSyncing, st.OperationState.Message)
	} else {
		removeCondition(app, navarchv1.ConditionReconciling)
	}
	ready := func(status metav1.ConditionStatus, reason, message string) {
		setCondition(app, navarchv1.ConditionReady, status, reason, message)
	}
	switch {
	case meta.IsStatusConditionTrue(st.Conditions, navarchv1.ApplicationInvalidSpecError):
		c := meta.FindStatusCondition(st.Conditions, navarchv1.ApplicationInvalidSpecError)
		ready(metav1.ConditionFalse, c.Reason, c.Message)
	case meta.IsStatusConditionTrue(st.Conditions, navarchv1.ApplicationComparisonError):
		ready(metav1.ConditionFalse, navarchv1.ReasonComparisonFailed, meta.FindStatusCondition(st.Conditions, navarchv1.ApplicationComparisonError).Message)
	case meta.IsStatusConditionTrue(st.Conditions, navarchv1.ApplicationSyncError) && !running &&
		(st.Sync.Status != navarchv1.SyncStatusSynced || st.Health.Status != navarchv1.HealthHealthy):
		ready(metav1.ConditionFalse, navarchv1.ReasonSyncFailed, meta.FindStatusCondition(st.Conditions, navarchv1.ApplicationSyncError).Message)
	case running:
		ready(metav1.ConditionFalse, navarchv1.ReasonSyncing, st.OperationState.Message)
	case st.Sync.Status != navarchv1.SyncStatusSynced:
		ready(metav1.ConditionFalse, navarchv1.ReasonOutOfSync, "the live state differs from Git at "+source.ShortRevision(st.Sync.Revision))
	case st.Health.Status != navarchv1.HealthHealthy:
		ready(metav1.ConditionFalse, navarchv1.ReasonNotHealthy, string(st.Health.Status)+": "+st.Health.Message)
	default:
		ready(metav1.ConditionTrue, navarchv1.ReasonSyncedAndHealthy, "synced to "+source.ShortRevision(st.Sync.Revision)+" and healthy")
	}
}

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }
