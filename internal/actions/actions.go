// Package actions holds what the user can ask of Applications and ApplicationSets: sync,
// refresh, rollback and terminate an Application's operation; promote, pause and resume an
// ApplicationSet's rollout. The navarch CLI and the web dashboard both call it, so an action
// decides and writes the same way whichever the user clicks or types.
//
// Every action takes a controller-runtime client built from the caller's own credentials, so
// the API server authorizes the user, not navarch. An action only writes what the controller
// acts on (the operation field, an annotation) and returns at once; the controller does the
// work and reports it in the object's status.
//
// Errors say what the CLI prints. They wrap the API server's errors, so apierrors.IsNotFound
// and apierrors.IsForbidden see through them, and errors.Is(err, ErrRefused) tells an action
// that the object's state refuses (an operation already runs, nothing waits for approval).
package actions

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
)

// ErrRefused is matched (errors.Is) by the errors of actions that the object's state refuses:
// an operation already runs, there is none to terminate, no such history entry, no rollout to
// promote or pause. The error's message says why, and what to do instead.
var ErrRefused = errors.New("refused")

// refusal is an error that matches ErrRefused and reads as the error it holds.
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

func (refusal) Is(target error) bool { return target == ErrRefused }

// refused makes err match ErrRefused without changing its message.
func refused(err error) error { return refusal{err} }

// OperationSummary says what an operation asked for: "sync to 1a2b3c4d (prune, dry run)",
// "rollback to history entry 3".
func OperationSummary(st *navarchv1.OperationState) string {
	op := st.Operation
	rev := ""
	if st.SyncResult != nil && st.SyncResult.Revision != "" {
		rev = " to " + source.ShortRevision(st.SyncResult.Revision)
	} else if op.Sync != nil && op.Sync.Revision != "" {
		rev = " to " + op.Sync.Revision
	}
	if op.Rollback != nil {
		return fmt.Sprintf("rollback to history entry %d%s", op.Rollback.ID, rev)
	}
	s := "sync" + rev
	var opts []string
	if sync := op.Sync; sync != nil {
		if sync.Prune {
			opts = append(opts, "prune")
		}
		if sync.DryRun {
			opts = append(opts, "dry run")
		}
		if n := len(sync.Resources); n == 1 {
			opts = append(opts, "1 resource")
		} else if n > 1 {
			opts = append(opts, fmt.Sprintf("%d resources", n))
		}
	}
	if len(opts) > 0 {
		s += " (" + strings.Join(opts, ", ") + ")"
	}
	return s
}

// Initiator says who started an operation: "by alice", "by automated sync".
func Initiator(by navarchv1.OperationInitiator) string {
	switch {
	case by.Username != "":
		return "by " + by.Username
	case by.Automated:
		return "by automated sync"
	}
	return "by an unknown initiator"
}

// Running reports whether an operation runs: the controller takes no other until it ends.
func Running(st *navarchv1.OperationState) bool {
	return st != nil && (st.Phase == navarchv1.OperationRunning || st.Phase == navarchv1.OperationTerminating)
}

// ago is how long before now t was, as kubectl prints ages: "5m", "3h12m", "2d".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return duration.HumanDuration(now.Sub(t))
}
