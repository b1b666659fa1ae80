package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/actions"
	"github.com/navarch-io/navarch/internal/project"
)

func newAppCommand() *cobra.Command {
	return commandGroup("app", "List, inspect, diff, sync and roll back Applications",
		`app works with the Applications in the management cluster. The controller does the work:
these commands read the status it writes and ask it for operations (sync, rollback, terminate)
through the Application's operation field and annotations.`,
		[]string{"apps", "application", "applications"},
		newAppListCommand(), newAppGetCommand(), newAppDiffCommand(), newAppSyncCommand(),
		newAppHistoryCommand(), newAppRollbackCommand(), newAppTerminateOpCommand())
}

func newAppListCommand() *cobra.Command {
	var (
		api      apiFlags
		all      bool
		output   string
		selector string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List Applications with their sync status, health and last operation",
		Example: `  navarch app list
  navarch app list -A -o wide
  navarch app list -n apps -l navarch.io/applicationset=fleet`,
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "table", "wide", "yaml", "json"); err != nil {
				return err
			}
			sel, err := labels.Parse(selector)
			if err != nil {
				return usageError{fmt.Errorf("--selector: %w", err)}
			}
			s, err := api.session()
			if err != nil {
				return err
			}
			opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}
			if !all {
				opts = append(opts, client.InNamespace(s.ns))
			}
			var list navarchv1.ApplicationList
			if err := s.c.List(cmd.Context(), &list, opts...); err != nil {
				return fmt.Errorf("list Applications: %w", err)
			}
			apps := list.Items
			sortApplications(apps)
			out := cmd.OutOrStdout()
			switch output {
			case "yaml", "json":
				objs := make([]client.Object, len(apps))
				for i := range apps {
					objs[i] = &apps[i]
				}
				return printObjects(out, output, true, objs...)
			}
			if len(apps) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), noneFound("Applications", all, s.ns))
				return nil
			}
			return printTable(out, appListRows(apps, output == "wide", all, time.Now(), paletteFor(out)))
		},
	}
	api.addTo(cmd.Flags())
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list Applications in every namespace")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table|wide|yaml|json")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector, e.g. env=prod")
	return cmd
}

// noneFound says that a list is empty, and where it looked.
func noneFound(what string, all bool, namespace string) string {
	if all {
		return fmt.Sprintf("No %s found.", what)
	}
	return fmt.Sprintf("No %s found in namespace %s.", what, namespace)
}

func sortApplications(apps []navarchv1.Application) {
	slices.SortFunc(apps, func(a, b navarchv1.Application) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
}

// appListRows is the table of app list. With all namespaces the name is namespace/name.
func appListRows(apps []navarchv1.Application, wide, allNamespaces bool, now time.Time, p palette) [][]string {
	header := []string{"NAME", "CLUSTER", "NAMESPACE", "SYNC", "HEALTH", "REVISION", "LAST-OP"}
	if wide {
		header = append(header, "REPO", "PATH", "TARGET", "PROJECT")
	}
	rows := [][]string{header}
	for i := range apps {
		app := &apps[i]
		name := app.Name
		if allNamespaces {
			name = qualified(app.Namespace, app.Name)
		}
		st := app.Status
		row := []string{
			name,
			destinationName(app.Spec.Destination),
			orDash(app.Spec.Destination.Namespace),
			p.sync(st.Sync.Status, orDash(string(st.Sync.Status))) + projectMark(app, p),
			p.health(st.Health.Status, orDash(string(st.Health.Status))),
			orDash(source.ShortRevision(st.Sync.Revision)),
			lastOperation(st.OperationState, now, p),
		}
		if wide {
			srcs := app.Spec.GetSources()
			repo := srcs[0].RepoURL
			if len(srcs) > 1 {
				repo += fmt.Sprintf(" (+%d)", len(srcs)-1)
			}
			row = append(row, repo, orDash(sourcePath(srcs[0])), orDash(srcs[0].TargetRevision), project.NameOf(&app.Spec))
		}
		rows = append(rows, row)
	}
	return rows
}

// projectHold is the condition by which the controller last said that the Application's
// Project stops it: InvalidSpecError (refused: nothing renders or syncs) before SyncBlocked (a
// sync window holds its automated syncs); nil when neither is True.
func projectHold(app *navarchv1.Application) *metav1.Condition {
	for _, t := range []string{navarchv1.ApplicationInvalidSpecError, navarchv1.ApplicationSyncBlocked} {
		if c := meta.FindStatusCondition(app.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return nil
}

// projectMark follows the sync status in app list: " (refused)" or " (blocked)" while the
// Project stops the Application (projectHold).
func projectMark(app *navarchv1.Application, p palette) string {
	c := projectHold(app)
	switch {
	case c == nil:
		return ""
	case c.Type == navarchv1.ApplicationInvalidSpecError:
		return " " + p.paint(ansiRed, "(refused)")
	}
	return " " + p.paint(ansiYellow, "(blocked)")
}

// destinationName is the cluster an Application names: by name, else by server URL.
func destinationName(d navarchv1.ApplicationDestination) string {
	if d.Name != "" {
		return d.Name
	}
	return orDash(d.Server)
}

// lastOperation summarises an operation state for a table cell: "Running 12s",
// "Succeeded 5m ago", or "-".
func lastOperation(st *navarchv1.OperationState, now time.Time, p palette) string {
	if st == nil {
		return "-"
	}
	phase := p.phase(st.Phase, string(st.Phase))
	if st.FinishedAt == nil {
		return phase + " " + ago(now, st.StartedAt.Time)
	}
	return phase + " " + ago(now, st.FinishedAt.Time) + " ago"
}

func newAppGetCommand() *cobra.Command {
	var (
		api    apiFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Describe an Application: source, destination, status, resources and last operation",
		Example: `  navarch app get api-prod-eu -n apps
  navarch app get api-prod-eu -n apps -o yaml`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "table", "yaml", "json"); err != nil {
				return err
			}
			s, err := api.session()
			if err != nil {
				return err
			}
			app, err := s.application(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output != "table" {
				return printObjects(out, output, false, app)
			}
			return describeApplication(out, app, time.Now(), paletteFor(out))
		},
	}
	api.addTo(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table (a description)|yaml|json")
	return cmd
}

// application gets the Application name in the session's namespace.
func (s *session) application(ctx context.Context, name string) (*navarchv1.Application, error) {
	return getNamed(ctx, s, "Application", name, &navarchv1.Application{})
}

// getNamed reads the named object of kind in the session's namespace; a missing one is an
// error naming the kind, the namespace and the name.
func getNamed[T client.Object](ctx context.Context, s *session, kind, name string, obj T) (T, error) {
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, obj); err != nil {
		var zero T
		return zero, notFound(err, kind, s.ns, name)
	}
	return obj, nil
}

// describeApplication prints what a user needs to know about an Application, most
// important first.
func describeApplication(out io.Writer, app *navarchv1.Application, now time.Time, p palette) error {
	st := app.Status
	dst := app.Spec.Destination
	var fields [][]string
	field := func(name, value string) { fields = append(fields, []string{name + ":", value}) }
	field("Name", qualified(app.Namespace, app.Name))
	if set := app.Labels[navarchv1.LabelApplicationSet]; set != "" {
		field("ApplicationSet", set)
	}
	field("Project", project.NameOf(&app.Spec))
	if c := meta.FindStatusCondition(st.Conditions, navarchv1.ApplicationInvalidSpecError); c != nil && c.Status == metav1.ConditionTrue {
		field("Invalid spec", p.paint(ansiRed, c.Message)+" ("+c.Reason+"; nothing is rendered or synced)")
	}
	describeSources(field, "", app.Spec.GetSources())
	field("Destination", fmt.Sprintf("cluster %s, namespace %s", destinationName(dst), orDash(dst.Namespace)))
	field("Sync policy", syncPolicy(app))
	if c := meta.FindStatusCondition(st.Conditions, navarchv1.ApplicationSyncBlocked); c != nil && c.Status == metav1.ConditionTrue {
		// The controller's message is "syncs wait: <which window, until when>"; the condition
		// concerns automated syncs and rollout steps (manual syncs are refused when asked).
		field("Sync window", p.paint(ansiYellow, "automated syncs wait: "+strings.TrimPrefix(c.Message, "syncs wait: ")))
	}
	syncLine := p.sync(st.Sync.Status, orDefault(string(st.Sync.Status), "Unknown"))
	if st.Sync.Revision != "" {
		syncLine += " with " + source.ShortRevision(st.Sync.Revision)
	}
	if st.ReconciledAt != nil {
		syncLine += fmt.Sprintf(" (compared %s ago)", ago(now, st.ReconciledAt.Time))
	} else {
		syncLine += " (not compared yet)"
	}
	field("Sync", syncLine)
	health := p.health(st.Health.Status, orDefault(string(st.Health.Status), "Unknown"))
	if st.Health.Message != "" {
		health += ": " + st.Health.Message
	}
	field("Health", health)
	if err := printFields(out, fields); err != nil {
		return err
	}

	if len(st.Conditions) > 0 {
		fmt.Fprintln(out, "\nConditions:")
		rows := [][]string{{"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"}}
		for _, c := range st.Conditions {
			good := "False"
			if c.Type == navarchv1.ConditionReady {
				good = "True"
			}
			rows = append(rows, []string{c.Type, p.condition(string(c.Status), good), orDash(c.Reason),
				orDash(ago(now, c.LastTransitionTime.Time)), oneLine(c.Message, 512)})
		}
		if err := indentTable(out, rows); err != nil {
			return err
		}
	}

	fmt.Fprintf(out, "\nResources (%d):\n", len(st.Resources))
	if len(st.Resources) > 0 {
		if err := indentTable(out, resourceRows(st.Resources, false, p)); err != nil {
			return err
		}
	}

	fmt.Fprintln(out)
	var pending [][]string
	if op := app.Operation; op != nil {
		pending = append(pending, []string{"Requested:", fmt.Sprintf("%s %s, waiting for the controller to start it", requestSummary(op), actions.Initiator(op.InitiatedBy))})
	}
	if _, ok := app.Annotations[navarchv1.AnnotationTerminateOperation]; ok {
		pending = append(pending, []string{"Terminating:", "requested, waiting for the controller"})
	}
	if err := printFields(out, pending); err != nil {
		return err
	}
	return describeOperation(out, app, now, p)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// syncPolicy describes when an Application syncs.
func syncPolicy(app *navarchv1.Application) string {
	sp := app.Spec.SyncPolicy
	if sp == nil || sp.Automated == nil {
		return "manual" + syncOptionsSuffix(sp)
	}
	var opts []string
	for _, o := range []struct {
		on   bool
		name string
	}{{sp.Automated.Prune, "prune"}, {sp.Automated.SelfHeal, "self-heal"}, {sp.Automated.AllowEmpty, "allow-empty"}} {
		if o.on {
			opts = append(opts, o.name)
		}
	}
	s := "automated"
	if len(opts) > 0 {
		s += " (" + strings.Join(opts, ", ") + ")"
	}
	if why, paused := app.Annotations[navarchv1.AnnotationAutomatedSyncPaused]; paused {
		s += ", PAUSED by " + navarchv1.AnnotationAutomatedSyncPaused
		if why != "" && why != "true" {
			s += ": " + why
		}
	}
	return s + syncOptionsSuffix(sp)
}

func syncOptionsSuffix(sp *navarchv1.SyncPolicy) string {
	if sp == nil {
		return ""
	}
	var parts []string
	if len(sp.SyncOptions) > 0 {
		opts := make([]string, len(sp.SyncOptions))
		for i, o := range sp.SyncOptions {
			opts[i] = string(o)
		}
		parts = append(parts, "options "+strings.Join(opts, ","))
	}
	if r := sp.Retry; r != nil {
		limit := fmt.Sprint(r.Limit)
		if r.Limit < 0 {
			limit = "unlimited"
		}
		parts = append(parts, "retry limit "+limit)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// resourceRows is the table of an Application's resources; onlyDiffering keeps those that
// differ from Git.
func resourceRows(resources []navarchv1.ResourceStatus, onlyDiffering bool, p palette) [][]string {
	header := []string{"GROUP", "KIND", "NAMESPACE", "NAME", "STATUS", "HEALTH", "MESSAGE"}
	if onlyDiffering {
		header = []string{"GROUP", "KIND", "NAMESPACE", "NAME", "STATUS", "MESSAGE"}
	}
	rows := [][]string{header}
	for _, r := range resources {
		if onlyDiffering && !differs(r) {
			continue
		}
		status := p.sync(r.Status, orDash(string(r.Status)))
		if r.RequiresPruning {
			status = p.paint(ansiYellow, "RequiresPruning")
		}
		row := []string{orDash(r.Group), r.Kind, orDash(r.Namespace), r.Name, status}
		if !onlyDiffering {
			health := "-"
			if r.Health != nil {
				health = p.health(r.Health.Status, orDash(string(r.Health.Status)))
			}
			row = append(row, health)
		}
		msg := r.Message
		if r.Health != nil && r.Health.Message != "" && !onlyDiffering {
			msg = strings.TrimPrefix(msg+"; "+r.Health.Message, "; ")
		}
		rows = append(rows, append(row, oneLine(msg, 512)))
	}
	return rows
}

// differs reports whether a resource differs from Git, as the controller compared it.
func differs(r navarchv1.ResourceStatus) bool {
	return r.Status == navarchv1.SyncStatusOutOfSync || r.RequiresPruning
}

// describeOperation prints the last operation: what was asked, by whom, how it went, the
// retry state and the per-task results.
func describeOperation(out io.Writer, app *navarchv1.Application, now time.Time, p palette) error {
	st := app.Status.OperationState
	if st == nil {
		fmt.Fprintln(out, "Last operation:   none")
		return nil
	}
	when := "started " + ago(now, st.StartedAt.Time) + " ago"
	if st.FinishedAt != nil {
		when += fmt.Sprintf(", finished after %s", st.FinishedAt.Sub(st.StartedAt.Time).Round(time.Second))
	}
	var fields [][]string
	field := func(name, value string) { fields = append(fields, []string{name + ":", value}) }
	field("Last operation", fmt.Sprintf("%s, %s, %s", actions.OperationSummary(st), actions.Initiator(st.Operation.InitiatedBy), when))
	field("Phase", p.phase(st.Phase, string(st.Phase)))
	if st.Message != "" {
		field("Message", st.Message)
	}
	if st.RetryCount > 0 || st.NextRetryAt != nil {
		retry := fmt.Sprintf("%d retries so far", st.RetryCount)
		if limit, ok := retryLimit(app); ok {
			retry += fmt.Sprintf(" (limit %d)", limit)
		}
		if st.NextRetryAt != nil {
			retry += fmt.Sprintf("; next retry at %s (in %s)", st.NextRetryAt.Local().Format(time.TimeOnly),
				st.NextRetryAt.Sub(now).Round(time.Second))
		}
		field("Retry", retry)
	}
	if err := printFields(out, fields); err != nil {
		return err
	}
	if st.SyncResult == nil || len(st.SyncResult.Resources) == 0 {
		return nil
	}
	fmt.Fprintln(out, "Tasks:")
	return indentTable(out, taskRows(st.SyncResult.Resources, p))
}

func retryLimit(app *navarchv1.Application) (int64, bool) {
	st := app.Status.OperationState
	if st != nil && st.Operation.Retry != nil {
		return st.Operation.Retry.Limit, st.Operation.Retry.Limit >= 0
	}
	if sp := app.Spec.SyncPolicy; sp != nil && sp.Retry != nil {
		return sp.Retry.Limit, sp.Retry.Limit >= 0
	}
	return 0, false
}

// taskRows is the table of an operation's per-task results.
func taskRows(results []navarchv1.ResourceResult, p palette) [][]string {
	rows := [][]string{{"PHASE", "WAVE", "KIND", "NAMESPACE", "NAME", "STATUS", "HOOK", "MESSAGE"}}
	for _, r := range results {
		kind := r.Kind
		if r.Group != "" {
			kind += "." + r.Group
		}
		status := string(r.Status)
		switch r.Status {
		case navarchv1.ResultSynced, navarchv1.ResultPruned:
			status = p.paint(ansiGreen, status)
		case navarchv1.ResultSyncFailed:
			status = p.paint(ansiRed, status)
		}
		hook := "-"
		if r.HookType != "" || r.HookPhase != "" {
			hook = strings.Trim(r.HookType+":"+string(r.HookPhase), ":")
		}
		rows = append(rows, []string{orDash(string(r.SyncPhase)), fmt.Sprint(r.SyncWave), kind, orDash(r.Namespace), r.Name,
			orDash(status), hook, oneLine(r.Message, 512)})
	}
	return rows
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func newAppHistoryCommand() *cobra.Command {
	var (
		api    apiFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List an Application's successful syncs, the entries app rollback goes back to",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "table", "wide", "yaml", "json"); err != nil {
				return err
			}
			s, err := api.session()
			if err != nil {
				return err
			}
			app, err := s.application(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch output {
			case "yaml", "json":
				history := app.Status.History
				if history == nil {
					history = []navarchv1.RevisionHistory{}
				}
				return printDocument(out, output, history)
			}
			if len(app.Status.History) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "Application %s has no successful sync yet.\n", qualified(app.Namespace, app.Name))
				return nil
			}
			return printTable(out, historyRows(app.Status.History, output == "wide"))
		},
	}
	api.addTo(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table|wide|yaml|json")
	return cmd
}

// historyRows is the table of app history, oldest first.
func historyRows(history []navarchv1.RevisionHistory, wide bool) [][]string {
	header := []string{"ID", "REVISION", "DEPLOYED-AT", "INITIATED-BY", "SOURCE-PATH"}
	if wide {
		header = append(header, "REPO", "TARGET")
	}
	rows := [][]string{header}
	for _, h := range history {
		by := h.InitiatedBy.Username
		if by == "" && h.InitiatedBy.Automated {
			by = "automated"
		}
		rev := source.ShortRevision(h.Revision)
		if wide {
			rev = h.Revision
		}
		srcs := h.GetSources()
		paths, repos, targets := make([]string, len(srcs)), make([]string, len(srcs)), make([]string, len(srcs))
		for i, s := range srcs {
			paths[i], repos[i], targets[i] = orDash(sourcePath(s)), orDash(s.RepoURL), orDash(s.TargetRevision)
		}
		row := []string{fmt.Sprint(h.ID), rev, h.DeployedAt.Local().Format(time.DateTime), orDash(by), strings.Join(paths, ",")}
		if wide {
			row = append(row, strings.Join(repos, ","), strings.Join(targets, ","))
		}
		rows = append(rows, row)
	}
	return rows
}
