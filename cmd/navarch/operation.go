package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/actions"
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
				res, err := actions.ParseResource(r)
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
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			req, err := actions.Sync(ctx, s.c, s.key(args[0]), sync, api.kube.username())
			if err != nil {
				return s.actionError(err, "Application", args[0])
			}
			app := req.Application
			reportReplaced(cmd.ErrOrStderr(), req)
			fmt.Fprintf(out, "Requested a %s of Application %s.\n", requestSummary(req.Operation), qualified(app.Namespace, app.Name))
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

// requestSummary says what an operation asks for, before it runs.
func requestSummary(op *navarchv1.Operation) string {
	if op.Rollback != nil {
		return fmt.Sprintf("rollback to history entry %d", op.Rollback.ID)
	}
	st := &navarchv1.OperationState{Operation: *op}
	return actions.OperationSummary(st)
}

// key is the name of an object in the session's namespace.
func (s *session) key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: s.ns, Name: name}
}

// actionError is the error of an action on the object kind name: a missing object is named
// with where it was looked for, as every command does.
func (s *session) actionError(err error, kind, name string) error {
	if apierrors.IsNotFound(err) {
		return notFound(err, kind, s.ns, name)
	}
	return err
}

// reportReplaced says on stderr that the request replaced one the controller had not started.
func reportReplaced(stderr io.Writer, req *actions.Request) {
	if op, app := req.Replaced, req.Application; op != nil {
		fmt.Fprintf(stderr, "Replacing the operation of %s that the controller has not started yet (%s %s).\n",
			qualified(app.Namespace, app.Name), requestSummary(op), actions.Initiator(op.InitiatedBy))
	}
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
	fmt.Fprintf(stdout, "%s of Application %s %s", capitalise(actions.OperationSummary(st)), key, p.phase(st.Phase, string(st.Phase)))
	if st.Message != "" {
		fmt.Fprintf(stdout, ": %s", st.Message)
	}
	fmt.Fprintln(stdout)
	if st.Phase != navarchv1.OperationSucceeded {
		return fmt.Errorf("the %s of Application %s %s: %s", actions.OperationSummary(st), key, st.Phase, orDefault(st.Message, "no message"))
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
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			req, err := actions.Rollback(ctx, s.c, s.key(args[0]), id, api.kube.username())
			if err != nil {
				return s.actionError(err, "Application", args[0])
			}
			app, entry := req.Application, req.Entry
			reportReplaced(cmd.ErrOrStderr(), req)
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
			app, err := actions.Terminate(cmd.Context(), s.c, s.key(args[0]))
			if err != nil {
				return s.actionError(err, "Application", args[0])
			}
			now, st := time.Now(), app.Status.OperationState
			key := qualified(app.Namespace, app.Name)
			fmt.Fprintf(cmd.OutOrStdout(), "Asked the controller to terminate the %s of Application %s (%s, started %s ago).\nFollow it with: navarch app get %s -n %s\n",
				actions.OperationSummary(st), key, actions.Initiator(st.Operation.InitiatedBy), ago(now, st.StartedAt.Time), app.Name, app.Namespace)
			return nil
		},
	}
	api.addTo(cmd.Flags())
	return cmd
}
