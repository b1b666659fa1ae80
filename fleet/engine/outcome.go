package engine

import (
	"fmt"
	"time"
)

// A step of a sync operation ends in one of these ways. Errors talking to the cluster are not
// outcomes: a step returns them as errors, and the cluster queue tries again with backoff.
type outcomeKind int

const (
	// kindProceed: the step is done; the next step runs in the same pass.
	kindProceed outcomeKind = iota
	// kindWait: the operation cannot go on yet. A watch event, or the timer of the outcome,
	// brings the next pass.
	kindWait
	// kindFail: the attempt failed; it is retried, or the SyncFail hooks run and the operation
	// ends Failed.
	kindFail
	// kindEnded: the operation has ended (Succeeded or Failed); its status is final.
	kindEnded
)

// waitReason says what an operation waits for.
type waitReason int

const (
	// waitNone: the outcome is not a wait.
	waitNone waitReason = iota
	// waitRetry: the next attempt starts at nextRetryAt (a timer).
	waitRetry
	// waitHook: a hook instance to complete, or a previous instance to be deleted (watch
	// events of the instance).
	waitHook
	// waitHealth: the objects of a wave to become healthy before the next wave (watch events
	// of the objects).
	waitHealth
	// waitCRD: the kind of a CustomResourceDefinition applied earlier to be served. The API
	// discovery that tells it is not announced by any watch: a timer.
	waitCRD
	// waitPruneConfirmation: the prune-confirmed annotation on the Application (a watch
	// event of the Application).
	waitPruneConfirmation
)

func (r waitReason) String() string {
	switch r {
	case waitRetry:
		return "Retry"
	case waitHook:
		return "Hook"
	case waitHealth:
		return "Health"
	case waitCRD:
		return "CRD"
	case waitPruneConfirmation:
		return "PruneConfirmation"
	case waitNone:
		return "None"
	}
	return fmt.Sprintf("waitReason(%d)", int(r))
}

// outcome is how a step of a sync operation ended.
type outcome struct {
	kind outcomeKind
	// reason says what a wait is for.
	reason waitReason
	// message is what the operation's message becomes: what it waits for, or why the
	// attempt failed. An empty message leaves the operation's message as it is.
	message string
	// after is how soon a wait ends without an event: the next pass runs then. 0 means only
	// an event ends it.
	after time.Duration
}

func proceed() outcome { return outcome{kind: kindProceed} }

// waitEvent waits for a watch event.
func waitEvent(reason waitReason, message string) outcome {
	return outcome{kind: kindWait, reason: reason, message: message}
}

// waitTimer waits for a timer that fires after d.
func waitTimer(reason waitReason, message string, d time.Duration) outcome {
	return outcome{kind: kindWait, reason: reason, message: message, after: d}
}

func failure(message string) outcome { return outcome{kind: kindFail, message: message} }

func failuref(format string, args ...any) outcome { return failure(fmt.Sprintf(format, args...)) }

func operationEnded() outcome { return outcome{kind: kindEnded} }

func (o outcome) String() string {
	switch o.kind {
	case kindProceed:
		return "proceed"
	case kindWait:
		return fmt.Sprintf("wait(%s, %s): %s", o.reason, o.after, o.message)
	case kindFail:
		return "fail: " + o.message
	}
	return "ended"
}
