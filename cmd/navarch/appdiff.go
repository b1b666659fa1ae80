package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/actions"
)

func newAppDiffCommand() *cobra.Command {
	var (
		api     apiFlags
		refresh bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "diff NAME",
		Short: "Show the resources of an Application that differ from Git; exit 1 if any do",
		Long: `diff prints the resources the controller found OutOfSync or no longer in Git (to be pruned)
when it last compared the Application with Git, a server-side comparison against the live
cluster. It exits 0 when the Application is Synced and 1 when anything differs.

With --refresh it first asks the controller to compare again (the ` + navarchv1.AnnotationRefresh + `
annotation, which also fetches Git afresh) and waits until it has.`,
		Example: `  navarch app diff api-prod-eu -n apps
  navarch app diff api-prod-eu -n apps --refresh`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usageError{fmt.Errorf("--timeout must be positive, got %s", timeout)}
			}
			s, err := api.session()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var app *navarchv1.Application
			if refresh {
				app, err = s.refresh(ctx, args[0], timeout, cmd.ErrOrStderr())
			} else {
				app, err = s.application(ctx, args[0])
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			return printAppDiff(out, app, time.Now(), paletteFor(out))
		},
	}
	api.addTo(cmd.Flags())
	cmd.Flags().BoolVar(&refresh, "refresh", false, "have the controller compare with Git again first, and wait for it")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long --refresh waits for the controller")
	return cmd
}

// errDiffers is the outcome of a diff that found differences: exit code 1.
var errDiffers = errors.New("differs from Git")

// printAppDiff prints the differing resources of an Application and returns an error (exit 1)
// unless it is Synced without differences.
func printAppDiff(out io.Writer, app *navarchv1.Application, now time.Time, p palette) error {
	st := app.Status
	key := qualified(app.Namespace, app.Name)
	n := 0
	for _, r := range st.Resources {
		if differs(r) {
			n++
		}
	}
	if n == 0 && st.Sync.Status == navarchv1.SyncStatusSynced {
		fmt.Fprintf(out, "Application %s is %s with %s: no differences (compared %s ago).\n", key,
			p.sync(st.Sync.Status, string(st.Sync.Status)), orDash(source.ShortRevision(st.Sync.Revision)), comparedAgo(st, now))
		return nil
	}
	if st.Sync.Status != navarchv1.SyncStatusOutOfSync && n == 0 {
		why := "the controller has not compared it with Git yet"
		for _, c := range st.Conditions {
			if c.Type == navarchv1.ApplicationComparisonError && c.Status == "True" {
				why = "comparison failed: " + c.Message
			}
		}
		return fmt.Errorf("application %s has sync status %s: %s", key, orDefault(string(st.Sync.Status), "Unknown"), why)
	}
	fmt.Fprintf(out, "Application %s is %s with %s (compared %s ago); %d %s from Git:\n", key,
		p.sync(st.Sync.Status, string(st.Sync.Status)), orDash(source.ShortRevision(st.Sync.Revision)), comparedAgo(st, now),
		n, plural(n, "resource differs", "resources differ"))
	if n > 0 {
		if err := printTable(out, resourceRows(st.Resources, true, p)); err != nil {
			return err
		}
	}
	return fmt.Errorf("application %s %w: %d %s", key, errDiffers, n, plural(n, "resource", "resources"))
}

func comparedAgo(st navarchv1.ApplicationStatus, now time.Time) string {
	if st.ReconciledAt == nil {
		return "?"
	}
	return ago(now, st.ReconciledAt.Time)
}

// refresh asks the controller to compare an Application with Git again and waits until it
// has. The controller removes the annotation after it has written the comparison; the status
// (and status.reconciledAt) only changes when the comparison does, so the annotation's
// removal, not reconciledAt, is the signal.
func (s *session) refresh(ctx context.Context, name string, timeout time.Duration, stderr io.Writer) (*navarchv1.Application, error) {
	app, err := actions.Refresh(ctx, s.c, s.key(name))
	if err != nil {
		return nil, s.actionError(err, "Application", name)
	}
	key := qualified(app.Namespace, app.Name)
	fmt.Fprintf(stderr, "Waiting up to %s for the controller to compare %s with Git...\n", timeout, key)
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	app, err = watchApplication(waitCtx, s.c, s.ns, name, func(app *navarchv1.Application) (bool, error) {
		_, pending := app.Annotations[navarchv1.AnnotationRefresh]
		return !pending, nil
	})
	if errors.Is(err, errWaitExpired) {
		return nil, fmt.Errorf("the controller did not refresh Application %s within %s: is navarch controller running, and is the destination cluster Ready (navarch cluster list)?", key, timeout)
	}
	return app, err
}
