package actions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Request is an operation that Sync or Rollback asked of an Application.
type Request struct {
	// Application is the Application as the write left it: its operation field holds the
	// request, its status still shows the operation before it.
	Application *navarchv1.Application
	// Operation is the operation requested.
	Operation *navarchv1.Operation
	// Replaced is an operation requested earlier that the controller had not started yet, and
	// that this request replaced; nil when there was none.
	Replaced *navarchv1.Operation
	// Entry is, for a rollback, the history entry it goes back to; nil for a sync.
	Entry *navarchv1.RevisionHistory
}

// Sync asks the controller to sync the Application: it sets the operation field to sync, as
// started by username. It refuses (ErrRefused) while the Application runs an operation.
func Sync(ctx context.Context, c client.Client, key types.NamespacedName, sync navarchv1.SyncOperation, username string) (*Request, error) {
	op := &navarchv1.Operation{Sync: &sync, InitiatedBy: navarchv1.OperationInitiator{Username: username}}
	return request(ctx, c, key, op, nil)
}

// Rollback asks the controller to sync the Application back to the commit and source of its
// history entry id, as started by username; the controller pauses automated sync meanwhile
// (navarchv1.AnnotationAutomatedSyncPaused). It refuses (ErrRefused) while the Application runs
// an operation or when it has no such entry.
func Rollback(ctx context.Context, c client.Client, key types.NamespacedName, id int64, username string) (*Request, error) {
	op := &navarchv1.Operation{
		Rollback:    &navarchv1.RollbackOperation{ID: id},
		InitiatedBy: navarchv1.OperationInitiator{Username: username},
	}
	var entry navarchv1.RevisionHistory
	hasEntry := func(app *navarchv1.Application) error {
		i := slices.IndexFunc(app.Status.History, func(h navarchv1.RevisionHistory) bool { return h.ID == id })
		if i < 0 {
			ids := make([]string, len(app.Status.History))
			for j, h := range app.Status.History {
				ids[j] = fmt.Sprint(h.ID)
			}
			return refused(fmt.Errorf("application %s has no history entry %d (its entries: %s); see navarch app history %s -n %s",
				key, id, cmp.Or(strings.Join(ids, ", "), "none"), app.Name, app.Namespace))
		}
		entry = app.Status.History[i]
		return nil
	}
	req, err := request(ctx, c, key, op, hasEntry)
	if err != nil {
		return nil, err
	}
	req.Entry = &entry
	return req, nil
}

// request sets the operation of an Application unless it already runs one. check, if set,
// vets the Application first. The write is conditional on the version read, so an operation
// the controller starts meanwhile is never overwritten.
func request(ctx context.Context, c client.Client, key types.NamespacedName, op *navarchv1.Operation,
	check func(*navarchv1.Application) error) (*Request, error) {
	var req *Request
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := getApplication(ctx, c, key)
		if err != nil {
			return err
		}
		if err := checkNoRunningOperation(cur, time.Now()); err != nil {
			return err
		}
		if check != nil {
			if err := check(cur); err != nil {
				return err
			}
		}
		replaced := cur.Operation
		patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		cur.Operation = op
		if err := c.Patch(ctx, cur, patch); err != nil {
			return fmt.Errorf("set the operation of Application %s: %w", key, err)
		}
		req = &Request{Application: cur, Operation: op, Replaced: replaced}
		return nil
	})
	return req, err
}

// checkNoRunningOperation refuses when the Application runs an operation: the controller would
// drop a second one.
func checkNoRunningOperation(app *navarchv1.Application, now time.Time) error {
	st := app.Status.OperationState
	if !Running(st) {
		return nil
	}
	msg := ""
	if st.Message != "" {
		msg = ": " + st.Message
	}
	return refused(fmt.Errorf("application %s is already running an operation (%s %s, started %s ago, %s%s); wait for it, or stop it with: navarch app terminate-op %s -n %s",
		client.ObjectKeyFromObject(app), OperationSummary(st), Initiator(st.Operation.InitiatedBy),
		ago(now, st.StartedAt.Time), st.Phase, msg, app.Name, app.Namespace))
}

// Terminate asks the controller to stop the Application's running operation: it sets the
// annotation navarchv1.AnnotationTerminateOperation, which the controller removes once it has
// marked the operation Failed. It refuses (ErrRefused) when no operation runs. It returns the
// Application as the write left it; its status shows the operation asked to stop.
func Terminate(ctx context.Context, c client.Client, key types.NamespacedName) (*navarchv1.Application, error) {
	app, err := getApplication(ctx, c, key)
	if err != nil {
		return nil, err
	}
	if st := app.Status.OperationState; !Running(st) {
		last := "none"
		if st != nil {
			last = OperationSummary(st) + ", " + lastOperation(st, time.Now())
		}
		return nil, refused(fmt.Errorf("application %s has no running operation to terminate (last operation: %s)", key, last))
	}
	if err := annotateApplication(ctx, c, app, navarchv1.AnnotationTerminateOperation, "true"); err != nil {
		return nil, err
	}
	return app, nil
}

// lastOperation is the phase of an operation and when: "Running 12s", "Succeeded 5m ago".
func lastOperation(st *navarchv1.OperationState, now time.Time) string {
	if st.FinishedAt == nil {
		return string(st.Phase) + " " + ago(now, st.StartedAt.Time)
	}
	return string(st.Phase) + " " + ago(now, st.FinishedAt.Time) + " ago"
}

// Refresh asks the controller to compare the Application with Git again, looking the
// revisions up anew rather than from its cache: it sets the annotation
// navarchv1.AnnotationRefresh to the time of the request. The controller removes the
// annotation once it has written the comparison; that removal, not status.reconciledAt (which
// changes only when the comparison does), says the refresh is done. There is no separate
// "hard" refresh: every refresh skips the cache.
func Refresh(ctx context.Context, c client.Client, key types.NamespacedName) (*navarchv1.Application, error) {
	app, err := getApplication(ctx, c, key)
	if err != nil {
		return nil, err
	}
	if err := annotateApplication(ctx, c, app, navarchv1.AnnotationRefresh, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return nil, err
	}
	return app, nil
}

// getApplication reads the Application; the error wraps the API server's, so a missing one is
// apierrors.IsNotFound.
func getApplication(ctx context.Context, c client.Client, key types.NamespacedName) (*navarchv1.Application, error) {
	app := &navarchv1.Application{}
	if err := c.Get(ctx, key, app); err != nil {
		return nil, fmt.Errorf("get Application %s: %w", key, err)
	}
	return app, nil
}

// annotateApplication sets one annotation of app with a merge patch from the version read.
func annotateApplication(ctx context.Context, c client.Client, app *navarchv1.Application, name, value string) error {
	patch := client.MergeFrom(app.DeepCopy())
	if app.Annotations == nil {
		app.Annotations = map[string]string{}
	}
	app.Annotations[name] = value
	if err := c.Patch(ctx, app, patch); err != nil {
		return fmt.Errorf("annotate Application %s: %w", client.ObjectKeyFromObject(app), err)
	}
	return nil
}

// ParseResource parses a resource to sync, written [GROUP:]KIND:[NAMESPACE/]NAME
// (apps:Deployment:web, ConfigMap:api/settings). The errors name the --resource flag.
func ParseResource(s string) (navarchv1.SyncOperationResource, error) {
	var r navarchv1.SyncOperationResource
	parts := strings.Split(s, ":")
	var name string
	switch len(parts) {
	case 2:
		r.Kind, name = parts[0], parts[1]
	case 3:
		r.Group, r.Kind, name = parts[0], parts[1], parts[2]
	default:
		return r, fmt.Errorf("--resource %q: want [GROUP:]KIND:[NAMESPACE/]NAME, e.g. apps:Deployment:web", s)
	}
	if ns, n, ok := strings.Cut(name, "/"); ok {
		r.Namespace, name = ns, n
		if ns == "" {
			return r, fmt.Errorf("--resource %q: empty namespace before /", s)
		}
	}
	r.Name = name
	if r.Kind == "" || r.Name == "" {
		return r, fmt.Errorf("--resource %q: want [GROUP:]KIND:[NAMESPACE/]NAME with a kind and a name", s)
	}
	return r, nil
}
