package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/actions"
)

// The rollout commands read and steer a RollingSync rollout. The controller does the work:
// rollout shows status.rollout and status.applicationStatus, promote and pause/resume set or
// remove the annotations the controller acts on.

func newAppSetRolloutCommand() *cobra.Command {
	var (
		api    apiFlags
		output string
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "rollout NAME",
		Short: "Show the progressive rollout (RollingSync) of an ApplicationSet, step by step",
		Long: `rollout shows where a RollingSync rollout is: its phase, the step it is at and since when,
and what it waits for or why it halted; then each step with its selector, its limits and its
Applications by state; then each Application with its step and rollout state. Applications that
no step selects are flagged.

-w prints the rollout again each time it changes, until it is Completed (exit 0) or Halted
(exit 1), or until interrupted.`,
		Example: `  navarch appset rollout fleet -n apps
  navarch appset rollout fleet -n apps -w
  navarch appset rollout fleet -n apps -o yaml`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "table", "yaml", "json"); err != nil {
				return err
			}
			s, err := api.session()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if follow {
				return s.followRollout(ctx, args[0], output, out, stderr)
			}
			set, err := s.applicationSet(ctx, args[0])
			if err != nil {
				return err
			}
			return printRolloutOutput(out, stderr, set, output, time.Now())
		},
	}
	api.addTo(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table (a description)|yaml|json")
	cmd.Flags().BoolVarP(&follow, "watch", "w", false, "print the rollout again on every change until it is Completed or Halted")
	return cmd
}

// printRolloutOutput prints one version of the rollout in the chosen format. Without a
// RollingSync strategy, the table form is one line on stderr saying so.
func printRolloutOutput(out, stderr io.Writer, set *navarchv1.ApplicationSet, output string, now time.Time) error {
	if output != "table" {
		return printDocument(out, output, rolloutDocumentOf(set))
	}
	if _, ok := actions.RollingSteps(set); !ok {
		fmt.Fprintln(stderr, actions.NoRollingSync(set, "show")+".")
		return nil
	}
	return printRollout(out, set, now, paletteFor(out))
}

// followRollout prints the rollout, then again whenever what it shows changes, until the
// rollout ends or ctx does (an interrupt, which is not an error).
func (s *session) followRollout(ctx context.Context, name, output string, out, stderr io.Writer) error {
	// A missing ApplicationSet is an error at once, not a wait for one to appear.
	if _, err := s.applicationSet(ctx, name); err != nil {
		return err
	}
	var (
		last    *rolloutView
		printed int
	)
	set, err := watchApplicationSet(ctx, s.c, s.ns, name, func(set *navarchv1.ApplicationSet) (bool, error) {
		v := viewOf(set)
		if last != nil && equality.Semantic.DeepEqual(*last, v) {
			return false, nil
		}
		last = &v
		if printed > 0 {
			separator := "\n"
			if output == "yaml" {
				separator = "---\n"
			}
			if output != "json" {
				fmt.Fprint(out, separator)
			}
		}
		printed++
		if err := printRolloutOutput(out, stderr, set, output, time.Now()); err != nil {
			return false, err
		}
		_, rolling := actions.RollingSteps(set)
		return !rolling || rolloutEnded(set), nil
	})
	switch {
	case errors.Is(err, errWaitExpired):
		return nil // interrupted
	case err != nil:
		return err
	}
	if r := set.Status.Rollout; r != nil && r.Phase == navarchv1.RolloutPhaseHalted {
		return fmt.Errorf("the rollout of ApplicationSet %s halted at step %d: %s",
			qualified(set.Namespace, set.Name), r.Step, orDefault(r.Message, "no message"))
	}
	return nil
}

// rolloutEnded reports whether the rollout is Completed or Halted: -w stops there.
func rolloutEnded(set *navarchv1.ApplicationSet) bool {
	r := set.Status.Rollout
	return r != nil && (r.Phase == navarchv1.RolloutPhaseCompleted || r.Phase == navarchv1.RolloutPhaseHalted)
}

// rolloutView is what rollout shows of an ApplicationSet; -w prints again when it changes.
// Its fields are exported because equality.Semantic panics on unexported ones.
type rolloutView struct {
	Doc             rolloutDocument
	Paused, Promote string
	HasPaused       bool
}

func viewOf(set *navarchv1.ApplicationSet) rolloutView {
	paused, hasPaused := set.Annotations[navarchv1.AnnotationRolloutPaused]
	return rolloutView{Doc: rolloutDocumentOf(set), Paused: paused, HasPaused: hasPaused,
		Promote: set.Annotations[navarchv1.AnnotationPromote]}
}

// rolloutDocument is rollout -o yaml|json: the strategy and the rollout's status.
type rolloutDocument struct {
	Strategy          *navarchv1.ApplicationSetStrategy    `json:"strategy"`
	Rollout           *navarchv1.RolloutStatus             `json:"rollout"`
	ApplicationStatus []navarchv1.RolloutApplicationStatus `json:"applicationStatus"`
}

func rolloutDocumentOf(set *navarchv1.ApplicationSet) rolloutDocument {
	apps := set.Status.ApplicationStatus
	if apps == nil {
		apps = []navarchv1.RolloutApplicationStatus{}
	}
	return rolloutDocument{Strategy: set.Spec.Strategy, Rollout: set.Status.Rollout, ApplicationStatus: apps}
}

// printRollout describes a RollingSync rollout: the header, the steps, the Applications.
func printRollout(out io.Writer, set *navarchv1.ApplicationSet, now time.Time, p palette) error {
	steps, _ := actions.RollingSteps(set)
	if err := printFields(out, rolloutHeader(set, steps, now, p)); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nSteps:")
	if err := indentTable(out, rolloutStepRows(set, steps, p)); err != nil {
		return err
	}
	apps := set.Status.ApplicationStatus
	if len(apps) == 0 {
		fmt.Fprintln(out, "\nApplications:     none in the rollout yet")
		return nil
	}
	fmt.Fprintln(out, "\nApplications:")
	if err := indentTable(out, rolloutAppRows(apps, now, p)); err != nil {
		return err
	}
	if n := unmatched(apps); n > 0 {
		fmt.Fprintf(out, "\n%d %s no step (STEP none), and the rollout never syncs %s: add a step whose matchExpressions select %s.\n",
			n, plural(n, "Application matches", "Applications match"), plural(n, "it", "them"), plural(n, "it", "them"))
	}
	return nil
}

// rolloutHeader is the description above the tables: the phase, the step and since when, the
// soak, the controller's message, requests it has not acted on yet and what to do next.
func rolloutHeader(set *navarchv1.ApplicationSet, steps []navarchv1.RollingSyncStep, now time.Time, p palette) [][]string {
	var fields [][]string
	field := func(name, value string) { fields = append(fields, []string{name + ":", value}) }
	field("ApplicationSet", qualified(set.Namespace, set.Name))
	r := set.Status.Rollout
	if r == nil || r.Phase == "" {
		field("Phase", "- (the controller has not reported on the rollout yet)")
		field("Steps", fmt.Sprint(len(steps)))
	} else {
		field("Phase", paintPhase(p, r.Phase))
		if r.Phase == navarchv1.RolloutPhaseCompleted {
			field("Steps", fmt.Sprintf("all %d done", len(steps)))
		} else {
			step := fmt.Sprintf("%d of %d", r.Step, len(steps))
			if r.StepStartedAt != nil {
				step += ", started " + ago(now, r.StepStartedAt.Time) + " ago"
			}
			field("Step", step)
			if soak := soakLine(r, steps, now); soak != "" {
				field("Soak", soak)
			}
		}
		if r.Message != "" {
			field("Message", r.Message)
		}
	}
	paused, hasPaused := set.Annotations[navarchv1.AnnotationRolloutPaused]
	switch {
	case hasPaused:
		how := navarchv1.AnnotationRolloutPaused
		if paused != "" && paused != "true" {
			how += ": " + paused
		}
		field("Paused", fmt.Sprintf("by %s; no new sync starts, syncs already started finish", how))
	case r != nil && r.Phase == navarchv1.RolloutPhasePaused:
		field("Paused", "no longer: "+navarchv1.AnnotationRolloutPaused+" is gone; the controller resumes at its next pass")
	}
	if v, ok := set.Annotations[navarchv1.AnnotationPromote]; ok {
		field("Promote", fmt.Sprintf("step %s requested (%s), waiting for the controller to record it", v, navarchv1.AnnotationPromote))
	}
	switch {
	case hasPaused:
		field("Resume with", fmt.Sprintf("navarch appset resume %s -n %s", set.Name, set.Namespace))
	case r != nil && r.Phase == navarchv1.RolloutPhaseWaitingForApproval && !promoteRequested(set, r.Step):
		field("Approve with", fmt.Sprintf("navarch appset promote %s -n %s", set.Name, set.Namespace))
	}
	return fields
}

// soakLine says how long the current step has been Healthy, against its minSuccessTime.
func soakLine(r *navarchv1.RolloutStatus, steps []navarchv1.RollingSyncStep, now time.Time) string {
	if r.StepHealthyAt == nil {
		return ""
	}
	healthy := now.Sub(r.StepHealthyAt.Time)
	line := "Healthy for " + shortDuration(healthy)
	if i := int(r.Step) - 1; i >= 0 && i < len(steps) && steps[i].MinSuccessTime != nil {
		soak := steps[i].MinSuccessTime.Duration
		line += " of " + shortDuration(soak)
		if left := soak - healthy; left > 0 {
			line += ", " + shortDuration(left) + " left"
		}
	}
	return line
}

func promoteRequested(set *navarchv1.ApplicationSet, step int32) bool {
	return set.Annotations[navarchv1.AnnotationPromote] == strconv.Itoa(int(step))
}

// rolloutStepRows is the table of steps. STATE is where the rollout is relative to each step:
// done, current or waiting.
func rolloutStepRows(set *navarchv1.ApplicationSet, steps []navarchv1.RollingSyncStep, p palette) [][]string {
	rows := [][]string{{"STEP", "SELECTOR", "MAX-UPDATE", "SOAK", "APPROVAL", "APPLICATIONS", "STATE"}}
	counts := actions.StepCounts(set)
	r := set.Status.Rollout
	for i, step := range steps {
		n := int32(i + 1)
		maxUpdate := "all"
		if step.MaxUpdate != nil {
			maxUpdate = step.MaxUpdate.String()
		}
		soak := "-"
		if step.MinSuccessTime != nil {
			soak = shortDuration(step.MinSuccessTime.Duration)
		}
		rows = append(rows, []string{
			fmt.Sprint(n),
			actions.StepSelector(step.MatchExpressions),
			maxUpdate,
			soak,
			approval(set, step, n, p),
			stateCounts(counts[fmt.Sprint(n)], p),
			stepState(r, n, p),
		})
	}
	return rows
}

// approval is a step's APPROVAL cell: required, requested (promote annotation not yet
// recorded), approved, or - when the step needs none.
func approval(set *navarchv1.ApplicationSet, step navarchv1.RollingSyncStep, n int32, p palette) string {
	switch {
	case !step.RequireApproval:
		return "-"
	case set.Status.Rollout != nil && slices.Contains(set.Status.Rollout.ApprovedSteps, n):
		return p.paint(ansiGreen, "approved")
	case promoteRequested(set, n):
		return p.paint(ansiYellow, "requested")
	}
	return p.paint(ansiYellow, "required")
}

// rolloutStates are the rollout states of an Application in the order they pass.
var rolloutStates = []navarchv1.RolloutApplicationState{
	navarchv1.RolloutWaiting, navarchv1.RolloutPending, navarchv1.RolloutProgressing,
	navarchv1.RolloutHealthy, navarchv1.RolloutFailed,
}

// stateCounts is "1 Healthy, 2 Waiting", or - for a step without Applications.
func stateCounts(counts map[navarchv1.RolloutApplicationState]int, p palette) string {
	var parts []string
	for _, s := range rolloutStates {
		if n := counts[s]; n > 0 {
			parts = append(parts, paintState(p, s, fmt.Sprintf("%d %s", n, s)))
		}
	}
	var unknown []string // states this CLI does not know yet
	for s, n := range counts {
		if !slices.Contains(rolloutStates, s) {
			unknown = append(unknown, fmt.Sprintf("%d %s", n, orDefault(string(s), "?")))
		}
	}
	slices.Sort(unknown)
	parts = append(parts, unknown...)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// stepState is done, current or waiting; the current step of a halted rollout is "halted".
func stepState(r *navarchv1.RolloutStatus, n int32, p palette) string {
	switch {
	case r == nil || r.Phase == "":
		return p.paint(ansiGrey, "waiting")
	case r.Phase == navarchv1.RolloutPhaseCompleted || n < r.Step:
		return p.paint(ansiGreen, "done")
	case n == r.Step && r.Phase == navarchv1.RolloutPhaseHalted:
		return p.paint(ansiRed, "halted")
	case n == r.Step:
		return p.paint(ansiYellow, "current")
	}
	return p.paint(ansiGrey, "waiting")
}

// rolloutAppRows is the table of Applications, by step, those no step selects last.
func rolloutAppRows(apps []navarchv1.RolloutApplicationStatus, now time.Time, p palette) [][]string {
	apps = slices.Clone(apps)
	stepOrder := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			return math.MaxInt // no step: last
		}
		return n
	}
	slices.SortFunc(apps, func(a, b navarchv1.RolloutApplicationStatus) int {
		return cmp.Or(cmp.Compare(stepOrder(a.Step), stepOrder(b.Step)), strings.Compare(a.Application, b.Application))
	})
	rows := [][]string{{"APPLICATION", "STEP", "STATUS", "REVISION", "SINCE", "MESSAGE"}}
	for _, a := range apps {
		step := a.Step
		if step == "" {
			step = p.paint(ansiRed, "none")
		}
		since := ""
		if a.LastTransitionTime != nil {
			since = ago(now, a.LastTransitionTime.Time)
		}
		rows = append(rows, []string{a.Application, step, paintState(p, a.Status, orDash(string(a.Status))),
			orDash(source.ShortRevision(a.TargetRevision)), orDash(since), orDash(oneLine(a.Message, 512))})
	}
	return rows
}

func unmatched(apps []navarchv1.RolloutApplicationStatus) int {
	n := 0
	for _, a := range apps {
		if a.Step == "" {
			n++
		}
	}
	return n
}

// paintState colours an Application's rollout state like a health: green when Healthy, yellow
// while on its way, red when Failed, grey while it waits.
func paintState(p palette, s navarchv1.RolloutApplicationState, text string) string {
	switch s {
	case navarchv1.RolloutHealthy:
		return p.paint(ansiGreen, text)
	case navarchv1.RolloutPending, navarchv1.RolloutProgressing:
		return p.paint(ansiYellow, text)
	case navarchv1.RolloutFailed:
		return p.paint(ansiRed, text)
	}
	return p.paint(ansiGrey, text)
}

// paintPhase colours a rollout phase: green when Completed, red when Halted, yellow otherwise.
func paintPhase(p palette, phase navarchv1.RolloutPhase) string {
	switch phase {
	case navarchv1.RolloutPhaseCompleted:
		return p.paint(ansiGreen, string(phase))
	case navarchv1.RolloutPhaseHalted:
		return p.paint(ansiRed, string(phase))
	}
	return p.paint(ansiYellow, string(phase))
}

// shortDuration prints a duration the way it is written in a manifest, without zero units:
// 10m, 1h30m, 45s.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func newAppSetPromoteCommand() *cobra.Command {
	var (
		api  apiFlags
		step int32
	)
	cmd := &cobra.Command{
		Use:   "promote NAME",
		Short: "Approve a rollout step that requires approval",
		Long: `promote approves a RollingSync step that has requireApproval: it sets the annotation
` + navarchv1.AnnotationPromote + ` to the step's number; the controller records the approval (in
status.rollout.approvedSteps), removes the annotation and starts the step once the steps before
it are done. Without --step it approves the step the rollout waits on; with --step it may
approve a later step ahead of time.`,
		Example: `  navarch appset promote fleet -n apps
  navarch appset promote fleet -n apps --step 3`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			stepGiven := cmd.Flags().Changed("step")
			if stepGiven && step < 1 {
				return usageError{fmt.Errorf("--step must be a step number, from 1, got %d", step)}
			}
			s, err := api.session()
			if err != nil {
				return err
			}
			if !stepGiven {
				step = 0
			}
			res, err := actions.Promote(cmd.Context(), s.c, s.key(args[0]), step)
			if err != nil {
				return s.actionError(err, "ApplicationSet", args[0])
			}
			if res.Replaced != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "Replacing the request to promote step %s of %s, which the controller has not recorded yet.\n",
					res.Replaced, qualified(res.ApplicationSet.Namespace, res.ApplicationSet.Name))
			}
			fmt.Fprintln(cmd.OutOrStdout(), res.Message)
			return nil
		},
	}
	api.addTo(cmd.Flags())
	cmd.Flags().Int32Var(&step, "step", 0, "the step to approve, from 1 (default: the step the rollout waits on)")
	return cmd
}

func newAppSetPauseCommand() *cobra.Command {
	return newAppSetPauseResumeCommand(true)
}

func newAppSetResumeCommand() *cobra.Command {
	return newAppSetPauseResumeCommand(false)
}

// newAppSetPauseResumeCommand is pause or resume: they add and remove the same annotation.
func newAppSetPauseResumeCommand(pause bool) *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "pause NAME",
		Short: "Pause an ApplicationSet's rollout: no new sync starts until it is resumed",
		Long: `pause sets the annotation ` + navarchv1.AnnotationRolloutPaused + `=true on the ApplicationSet: while
it is there the controller starts no new sync of the rollout; syncs already started finish.
navarch appset resume removes it.`,
		Example: `  navarch appset pause fleet -n apps`,
		Args:    exactArgs("NAME"),
	}
	if !pause {
		cmd.Use = "resume NAME"
		cmd.Short = "Resume a paused rollout"
		cmd.Long = `resume removes the annotation ` + navarchv1.AnnotationRolloutPaused + ` from the ApplicationSet; the
controller goes on with the rollout where it stopped.`
		cmd.Example = `  navarch appset resume fleet -n apps`
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		s, err := api.session()
		if err != nil {
			return err
		}
		act := actions.Resume
		if pause {
			act = actions.Pause
		}
		res, err := act(cmd.Context(), s.c, s.key(args[0]))
		if err != nil {
			return s.actionError(err, "ApplicationSet", args[0])
		}
		fmt.Fprintln(cmd.OutOrStdout(), res.Message)
		return nil
	}
	api.addTo(cmd.Flags())
	return cmd
}

// watchApplicationSet watches one ApplicationSet until done returns true for a version of it,
// and returns that version, as watchApplication does for an Application: from the current
// state, across dropped watches, without polling.
func watchApplicationSet(ctx context.Context, c client.WithWatch, namespace, name string,
	done func(*navarchv1.ApplicationSet) (bool, error)) (*navarchv1.ApplicationSet, error) {
	byName := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = byName
			list := &navarchv1.ApplicationSetList{}
			return list, c.List(ctx, list, client.InNamespace(namespace), &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = byName
			return c.Watch(ctx, &navarchv1.ApplicationSetList{}, client.InNamespace(namespace), &client.ListOptions{Raw: &opts})
		},
	}
	var last *navarchv1.ApplicationSet
	_, err := watchtools.UntilWithSync(ctx, lw, &navarchv1.ApplicationSet{}, nil, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Deleted:
			return false, fmt.Errorf("the ApplicationSet %s was deleted", qualified(namespace, name))
		case watch.Added, watch.Modified:
			set, ok := ev.Object.(*navarchv1.ApplicationSet)
			if !ok {
				return false, nil
			}
			last = set
			return done(set)
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		return last, errWaitExpired
	}
	return last, err
}
