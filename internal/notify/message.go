package notify

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
)

// Message is the JSON body a webhook destination receives; docs/notifications.md documents
// it field by field.
type Message struct {
	// ID identifies the delivery; retries of one delivery carry the same ID.
	ID string `json:"id"`
	// Time is when the transition was observed.
	Time time.Time `json:"time"`
	// Trigger is the transition.
	Trigger Trigger `json:"trigger"`
	// Severity is "warning" for problems, "info" otherwise.
	Severity string `json:"severity"`
	// Subscription is the name of the subscription that sent it.
	Subscription string `json:"subscription"`
	// Summary is one readable line, the text of Slack messages.
	Summary string `json:"summary"`
	// Application is set for Application triggers.
	Application *ApplicationInfo `json:"application,omitempty"`
	// ApplicationSet is set for ApplicationSet triggers.
	ApplicationSet *ApplicationSetInfo `json:"applicationSet,omitempty"`
}

// ApplicationInfo is the state of an Application when a trigger fired.
type ApplicationInfo struct {
	Namespace      string            `json:"namespace"`
	Name           string            `json:"name"`
	UID            types.UID         `json:"uid"`
	Project        string            `json:"project"`
	ApplicationSet string            `json:"applicationSet,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	// Destination is spec.destination's name or server, and namespace.
	Destination string `json:"destination"`
	// Sync is status.sync.status, at Revision (status.sync.revision).
	Sync     navarchv1.SyncStatusCode `json:"sync"`
	Revision string                   `json:"revision,omitempty"`
	// Health is status.health.status, with its message.
	Health        navarchv1.HealthStatusCode `json:"health"`
	HealthMessage string                     `json:"healthMessage,omitempty"`
	// Operation is the last operation (status.operationState), if any.
	Operation *OperationInfo `json:"operation,omitempty"`
	// PullRequest is the annotation navarch.io/pull-request of a preview:
	// owner/repo#number@sha.
	PullRequest string `json:"pullRequest,omitempty"`
}

// OperationInfo summarises status.operationState.
type OperationInfo struct {
	Phase       navarchv1.OperationPhase `json:"phase"`
	Message     string                   `json:"message,omitempty"`
	Revision    string                   `json:"revision,omitempty"`
	StartedAt   time.Time                `json:"startedAt"`
	FinishedAt  *time.Time               `json:"finishedAt,omitempty"`
	RetryCount  int64                    `json:"retryCount,omitempty"`
	InitiatedBy string                   `json:"initiatedBy,omitempty"`
}

// ApplicationSetInfo is the state of an ApplicationSet when a trigger fired.
type ApplicationSetInfo struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	UID       types.UID         `json:"uid"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Rollout is status.rollout.
	Rollout *RolloutInfo `json:"rollout,omitempty"`
}

// RolloutInfo summarises status.rollout.
type RolloutInfo struct {
	Phase   navarchv1.RolloutPhase `json:"phase"`
	Step    int32                  `json:"step,omitempty"`
	Steps   int                    `json:"steps,omitempty"`
	Message string                 `json:"message,omitempty"`
}

// ApplicationMessage describes trigger t of app.
func ApplicationMessage(t Trigger, app *navarchv1.Application, now time.Time) Message {
	st := app.Status
	info := &ApplicationInfo{
		Namespace: app.Namespace, Name: app.Name, UID: app.UID,
		Project: project(app.Spec.Project), ApplicationSet: app.Labels[navarchv1.LabelApplicationSet], Labels: app.Labels,
		Destination: destination(app.Spec.Destination),
		Sync:        st.Sync.Status, Revision: st.Sync.Revision,
		Health: st.Health.Status, HealthMessage: st.Health.Message,
		PullRequest: app.Annotations[navarchv1.AnnotationPullRequest],
	}
	if op := st.OperationState; op != nil {
		o := &OperationInfo{Phase: op.Phase, Message: op.Message, StartedAt: op.StartedAt.UTC(), RetryCount: op.RetryCount}
		if op.SyncResult != nil {
			o.Revision = op.SyncResult.Revision
		}
		if op.FinishedAt != nil {
			f := op.FinishedAt.UTC()
			o.FinishedAt = &f
		}
		switch by := op.Operation.InitiatedBy; {
		case by.Automated:
			o.InitiatedBy = "automated sync"
		case by.Username != "":
			o.InitiatedBy = by.Username
		}
		info.Operation = o
	}
	name := "Application " + app.Namespace + "/" + app.Name
	var summary string
	switch t {
	case OutOfSync:
		summary = fmt.Sprintf("%s is OutOfSync with %s", name, short(info.Revision))
	case Degraded:
		summary = fmt.Sprintf("%s is Degraded: %s", name, firstLine(info.HealthMessage))
	case SyncFailed:
		summary = fmt.Sprintf("%s: sync of %s failed: %s", name, short(info.Operation.Revision), firstLine(info.Operation.Message))
	case SyncSucceeded:
		summary = fmt.Sprintf("%s: synced %s", name, short(info.Operation.Revision))
	case PreviewReady:
		summary = fmt.Sprintf("%s: preview %s is Synced and Healthy at %s", name, pullRequestName(info.PullRequest), short(PreviewCommit(app)))
	default:
		summary = fmt.Sprintf("%s: %s", name, t)
	}
	return Message{
		Time: now.UTC(), Trigger: t, Severity: severity(t),
		Summary:     summary + placement(info),
		Application: info,
	}
}

// ApplicationSetMessage describes trigger t of set.
func ApplicationSetMessage(t Trigger, set *navarchv1.ApplicationSet, now time.Time) Message {
	info := &ApplicationSetInfo{Namespace: set.Namespace, Name: set.Name, UID: set.UID, Labels: set.Labels}
	if ro := set.Status.Rollout; ro != nil {
		info.Rollout = &RolloutInfo{Phase: ro.Phase, Step: ro.Step, Message: ro.Message}
		if rs := set.Spec.Strategy; rs != nil && rs.RollingSync != nil {
			info.Rollout.Steps = len(rs.RollingSync.Steps)
		}
	}
	name := "ApplicationSet " + set.Namespace + "/" + set.Name
	summary := fmt.Sprintf("%s: %s", name, t)
	if ro := info.Rollout; ro != nil {
		switch t {
		case RolloutHalted:
			summary = fmt.Sprintf("%s: rollout halted at step %d: %s", name, ro.Step, firstLine(ro.Message))
		case RolloutCompleted:
			summary = fmt.Sprintf("%s: rollout completed (%d steps)", name, ro.Steps)
		}
	}
	return Message{Time: now.UTC(), Trigger: t, Severity: severity(t), Summary: summary, ApplicationSet: info}
}

func severity(t Trigger) string {
	if t.Warning() {
		return "warning"
	}
	return "info"
}

// placement is the end of an Application's summary: its Project, and its destination, or
// "no destination" when spec.destination is empty (the Application is invalid).
func placement(info *ApplicationInfo) string {
	if info.Destination == "" {
		return " (project " + info.Project + ", no destination)"
	}
	return " (project " + info.Project + ", destination " + info.Destination + ")"
}

// destination is spec.destination's name or server, with "/namespace"; "" when none is set.
func destination(d navarchv1.ApplicationDestination) string {
	target := d.Name
	if target == "" {
		target = d.Server
	}
	if d.Namespace != "" {
		target += "/" + d.Namespace
	}
	return target
}

func short(rev string) string {
	if rev == "" {
		return "an unknown revision"
	}
	return source.ShortRevision(rev)
}

// pullRequestName drops the commit from owner/repo#number@sha.
func pullRequestName(ref string) string {
	name, _, _ := strings.Cut(ref, "@")
	return name
}

// firstLine keeps the first line of s, within 300 characters.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:297]) + "..."
	}
	if s == "" {
		return "no message"
	}
	return s
}
