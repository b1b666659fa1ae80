package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
)

// waitFlags are --wait and --timeout of the commands that start an operation.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) addTo(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait for the "+what+" to finish, printing its progress; exit 1 unless it succeeds")
	cmd.Flags().DurationVar(&w.timeout, "timeout", 5*time.Minute, "how long --wait waits")
}

func (w *waitFlags) check() error {
	if w.timeout <= 0 {
		return usageError{fmt.Errorf("--timeout must be positive, got %s", w.timeout)}
	}
	return nil
}

func newAppSyncCommand() *cobra.Command {
	var (
		api       apiFlags
		sync      navarchv1.SyncOperation
		resources []string
		options   []string
		wf        waitFlags
	)
	cmd := &cobra.Command{
		Use:   "sync NAME",
		Short: "Ask the controller to sync an Application, and optionally wait for the result",
		Long: `sync sets the Application's operation field; the controller starts the sync, records its
progress in status.operationState and clears the field. An Application runs one operation at a
time: sync refuses while one is running.`,
		Example: `  navarch app sync api-prod-eu -n apps --wait
  navarch app sync api-prod-eu -n apps --revision 1a2b3c4d --prune
  navarch app sync api-prod-eu -n apps --resource apps:Deployment:api --resource ConfigMap:api/settings`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wf.check(); err != nil {
				return err
			}
			for _, r := range resources {
				res, err := parseResource(r)
				if err != nil {
					return usageError{err}
				}
				sync.Resources = append(sync.Resources, res)
			}
			for _, o := range options {
				sync.SyncOptions = append(sync.SyncOptions, navarchv1.SyncOption(o))
			}
			s, err := api.session()
			if err != nil {
				return err
			}
			op := &navarchv1.Operation{Sync: &sync, InitiatedBy: navarchv1.OperationInitiator{Username: api.kube.username()}}
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			app, err := s.requestOperation(ctx, args[0], op, nil, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Requested a %s of Application %s.\n", requestSummary(op), qualified(app.Namespace, app.Name))
			if !wf.wait {
				fmt.Fprintf(out, "Follow it with: navarch app get %s -n %s\n", app.Name, app.Namespace)
				return nil
			}
			return s.waitForOperation(ctx, app, wf.timeout, out, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	api.addTo(f)
	f.StringVar(&sync.Revision, "revision", "", "commit, branch or tag to sync (default: spec.source.targetRevision)")
	f.BoolVar(&sync.Prune, "prune", false, "delete resources that are no longer in Git")
	f.BoolVar(&sync.DryRun, "dry-run", false, "run the sync as a server-side dry run, changing nothing")
	f.StringArrayVar(&resources, "resource", nil, "sync only this resource, as [GROUP:]KIND:[NAMESPACE/]NAME; repeatable")
	f.StringArrayVar(&options, "sync-option", nil, "sync option for this sync, e.g. ServerSideApply=true; repeatable")
	wf.addTo(cmd, "sync")
	return cmd
}

// parseResource parses [GROUP:]KIND:[NAMESPACE/]NAME.
func parseResource(s string) (navarchv1.SyncOperationResource, error) {
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

// requestSummary says what an operation asks for, before it runs.
func requestSummary(op *navarchv1.Operation) string {
	if op.Rollback != nil {
		return fmt.Sprintf("rollback to history entry %d", op.Rollback.ID)
	}
	st := &navarchv1.OperationState{Operation: *op}
	return operationSummary(st)
}

// requestOperation sets the operation of an Application unless it already runs one. check,
// if set, vets the Application first. The write is conditional on the version read, so an
// operation the controller starts meanwhile is never overwritten. It returns the Application
// as the write left it: its status still shows the operation before the request.
func (s *session) requestOperation(ctx context.Context, name string, op *navarchv1.Operation,
	check func(*navarchv1.Application) error, stderr io.Writer) (*navarchv1.Application, error) {
	var app *navarchv1.Application
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := s.application(ctx, name)
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
		if cur.Operation != nil {
			fmt.Fprintf(stderr, "Replacing the operation of %s that the controller has not started yet (%s %s).\n",
				qualified(cur.Namespace, cur.Name), requestSummary(cur.Operation), initiator(cur.Operation.InitiatedBy))
		}
		patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		cur.Operation = op
		if err := s.c.Patch(ctx, cur, patch); err != nil {
			return fmt.Errorf("set the operation of Application %s: %w", qualified(cur.Namespace, cur.Name), err)
		}
		app = cur
		return nil
	})
	return app, err
}

// checkNoRunningOperation fails when the Application runs an operation: the controller would
// drop a second one.
func checkNoRunningOperation(app *navarchv1.Application, now time.Time) error {
	st := app.Status.OperationState
	if st == nil || (st.Phase != navarchv1.OperationRunning && st.Phase != navarchv1.OperationTerminating) {
		return nil
	}
	msg := ""
	if st.Message != "" {
		msg = ": " + st.Message
	}
	return fmt.Errorf("application %s is already running an operation (%s %s, started %s ago, %s%s); wait for it, or stop it with: navarch app terminate-op %s -n %s",
		qualified(app.Namespace, app.Name), operationSummary(st), initiator(st.Operation.InitiatedBy),
		ago(now, st.StartedAt.Time), st.Phase, msg, app.Name, app.Namespace)
}

// waitForOperation follows the operation just requested on requested (the Application as the
// request left it) until it ends: progress goes to stderr as the controller's message changes,
// the per-task results to stdout.
//
// The controller clears the request before it records the operation it started
// (docs/sync-waves-and-hooks.md, "Requesting one"). The operation shown is therefore the
// requested one once the operation field is empty and the status shows another operation
// than the one before the request; until then it may still be the earlier one.
func (s *session) waitForOperation(ctx context.Context, requested *navarchv1.Application, timeout time.Duration, stdout, stderr io.Writer) error {
	name, before := requested.Name, requested.Status.OperationState
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fmt.Fprintf(stderr, "Waiting up to %s for the controller to run it...\n", timeout)
	start := time.Now()
	started, lastLine := false, ""
	app, err := watchApplication(waitCtx, s.c, s.ns, name, func(app *navarchv1.Application) (bool, error) {
		st := app.Status.OperationState
		if app.Operation != nil || st == nil || equality.Semantic.DeepEqual(st, before) {
			return false, nil // not started yet
		}
		started = true
		if line := progressLine(st); line != lastLine {
			fmt.Fprintf(stderr, "%6s  %s\n", time.Since(start).Round(time.Second), line)
			lastLine = line
		}
		return st.Phase != navarchv1.OperationRunning && st.Phase != navarchv1.OperationTerminating, nil
	})
	key := qualified(s.ns, name)
	switch {
	case errors.Is(err, errWaitExpired) && ctx.Err() != nil:
		return fmt.Errorf("interrupted; the operation of Application %s goes on in the controller: follow it with navarch app get %s -n %s", key, name, s.ns)
	case errors.Is(err, errWaitExpired) && !started:
		return fmt.Errorf("the controller did not start the operation of Application %s within %s: is navarch controller running, and is the destination cluster Ready (navarch cluster list)? The operation stays requested", key, timeout)
	case errors.Is(err, errWaitExpired):
		return fmt.Errorf("timed out after %s waiting for the operation of Application %s (%s); it goes on in the controller: follow it with navarch app get %s -n %s",
			timeout, key, lastLine, name, s.ns)
	case err != nil:
		return err
	}
	st := app.Status.OperationState
	p := paletteFor(stdout)
	if st.SyncResult != nil && len(st.SyncResult.Resources) > 0 {
		if err := printTable(stdout, taskRows(st.SyncResult.Resources, p)); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s of Application %s %s", capitalise(operationSummary(st)), key, p.phase(st.Phase, string(st.Phase)))
	if st.Message != "" {
		fmt.Fprintf(stdout, ": %s", st.Message)
	}
	fmt.Fprintln(stdout)
	if st.Phase != navarchv1.OperationSucceeded {
		return fmt.Errorf("the %s of Application %s %s: %s", operationSummary(st), key, st.Phase, orDefault(st.Message, "no message"))
	}
	return nil
}

// progressLine is one line of --wait progress: the phase, the controller's message and the
// retry state.
func progressLine(st *navarchv1.OperationState) string {
	line := string(st.Phase)
	if st.Message != "" {
		line += ": " + st.Message
	}
	if st.NextRetryAt != nil {
		line += fmt.Sprintf(" (retry %d at %s)", st.RetryCount+1, st.NextRetryAt.Local().Format(time.TimeOnly))
	}
	return line
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func newAppRollbackCommand() *cobra.Command {
	var (
		api apiFlags
		wf  waitFlags
	)
	cmd := &cobra.Command{
		Use:   "rollback NAME ID",
		Short: "Sync an Application back to an entry of its history, pausing automated sync",
		Long: `rollback asks the controller to sync the commit and source of a history entry (see
navarch app history). So that automated sync does not undo it at once, the controller pauses
automated sync with the annotation ` + navarchv1.AnnotationAutomatedSyncPaused + `; remove the
annotation to resume it.`,
		Example: `  navarch app history api-prod-eu -n apps
  navarch app rollback api-prod-eu 3 -n apps --wait`,
		Args: exactArgs("NAME", "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wf.check(); err != nil {
				return err
			}
			id, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil || id < 0 {
				return usageError{fmt.Errorf("ID must be a history entry id (a number, see navarch app history), got %q", args[1])}
			}
			s, err := api.session()
			if err != nil {
				return err
			}
			var entry navarchv1.RevisionHistory
			hasEntry := func(app *navarchv1.Application) error {
				i := slices.IndexFunc(app.Status.History, func(h navarchv1.RevisionHistory) bool { return h.ID == id })
				if i < 0 {
					ids := make([]string, len(app.Status.History))
					for j, h := range app.Status.History {
						ids[j] = fmt.Sprint(h.ID)
					}
					return fmt.Errorf("application %s has no history entry %d (its entries: %s); see navarch app history %s -n %s",
						qualified(app.Namespace, app.Name), id, orDefault(strings.Join(ids, ", "), "none"), app.Name, app.Namespace)
				}
				entry = app.Status.History[i]
				return nil
			}
			op := &navarchv1.Operation{
				Rollback:    &navarchv1.RollbackOperation{ID: id},
				InitiatedBy: navarchv1.OperationInitiator{Username: api.kube.username()},
			}
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			app, err := s.requestOperation(ctx, args[0], op, hasEntry, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Requested a rollback of Application %s to history entry %d (revision %s, path %s).\n",
				qualified(app.Namespace, app.Name), id, source.ShortRevision(entry.Revision), orDash(entry.Source.Path))
			fmt.Fprintf(out, `Automated sync is paused while the Application runs an older revision: the controller sets
the annotation %s on it. To resume automated sync, remove the annotation:
  kubectl annotate applications.navarch.io %s -n %s %s-
`, navarchv1.AnnotationAutomatedSyncPaused, app.Name, app.Namespace, navarchv1.AnnotationAutomatedSyncPaused)
			if !wf.wait {
				return nil
			}
			return s.waitForOperation(ctx, app, wf.timeout, out, cmd.ErrOrStderr())
		},
	}
	api.addTo(cmd.Flags())
	wf.addTo(cmd, "rollback")
	return cmd
}

func newAppTerminateOpCommand() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "terminate-op NAME",
		Short: "Ask the controller to stop an Application's running operation",
		Long: `terminate-op sets the annotation ` + navarchv1.AnnotationTerminateOperation + `; the controller stops
the running operation, marks it Failed and removes the annotation. Resources already applied
stay as they are.`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := api.session()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			app, err := s.application(ctx, args[0])
			if err != nil {
				return err
			}
			now := time.Now()
			key := qualified(app.Namespace, app.Name)
			st := app.Status.OperationState
			if st == nil || (st.Phase != navarchv1.OperationRunning && st.Phase != navarchv1.OperationTerminating) {
				last := "none"
				if st != nil {
					last = operationSummary(st) + ", " + lastOperation(st, now, palette{})
				}
				return fmt.Errorf("application %s has no running operation to terminate (last operation: %s)", key, last)
			}
			patch := client.MergeFrom(app.DeepCopy())
			if app.Annotations == nil {
				app.Annotations = map[string]string{}
			}
			app.Annotations[navarchv1.AnnotationTerminateOperation] = "true"
			if err := s.c.Patch(ctx, app, patch); err != nil {
				return fmt.Errorf("annotate Application %s: %w", key, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Asked the controller to terminate the %s of Application %s (%s, started %s ago).\nFollow it with: navarch app get %s -n %s\n",
				operationSummary(st), key, initiator(st.Operation.InitiatedBy), ago(now, st.StartedAt.Time), app.Name, app.Namespace)
			return nil
		},
	}
	api.addTo(cmd.Flags())
	return cmd
}
