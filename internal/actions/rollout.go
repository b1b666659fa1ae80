package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Result is what Promote, Pause or Resume did to an ApplicationSet's rollout.
type Result struct {
	// ApplicationSet is the ApplicationSet as the write left it, or as read when nothing was
	// written.
	ApplicationSet *navarchv1.ApplicationSet
	// Changed is false when there was nothing to do: the step was already approved, the
	// rollout already paused, or not paused.
	Changed bool
	// Message says what was done, or why nothing was, and what to do next, in a sentence or
	// two: what the CLI prints.
	Message string
	// Step is, for Promote, the step approved.
	Step int32
	// Replaced is, for Promote, the step of an earlier promote request that the controller had
	// not recorded yet and that this one replaced, as the annotation held it; "" when none.
	Replaced string
}

// Promote approves a RollingSync step that requires approval: it sets the annotation
// navarchv1.AnnotationPromote to the step's number; the controller records the approval and
// removes the annotation. step 0 approves the step the rollout waits on; a later step may be
// approved ahead of time. It refuses (ErrRefused) without a RollingSync strategy, for a step
// that needs no approval or does not exist, and for step 0 when nothing waits for approval.
func Promote(ctx context.Context, c client.Client, key types.NamespacedName, step int32) (Result, error) {
	set, err := getApplicationSet(ctx, c, key)
	if err != nil {
		return Result{}, err
	}
	pr, err := planPromotion(set, step)
	if err != nil {
		return Result{}, err
	}
	res := Result{ApplicationSet: set, Message: pr.message, Step: pr.step}
	if !pr.write {
		return res, nil
	}
	value := strconv.Itoa(int(pr.step))
	if pending, ok := set.Annotations[navarchv1.AnnotationPromote]; ok && pending != value {
		res.Replaced = pending
	}
	if err := annotateApplicationSet(ctx, c, set, navarchv1.AnnotationPromote, &value); err != nil {
		return Result{}, err
	}
	res.Changed = true
	return res, nil
}

// Pause pauses the ApplicationSet's rollout: it sets navarchv1.AnnotationRolloutPaused=true;
// while it is there the controller starts no new sync of the rollout, and syncs already
// started finish. It refuses (ErrRefused) without a RollingSync strategy.
func Pause(ctx context.Context, c client.Client, key types.NamespacedName) (Result, error) {
	return pauseOrResume(ctx, c, key, true)
}

// Resume removes navarchv1.AnnotationRolloutPaused from the ApplicationSet; the controller goes
// on with the rollout where it stopped. It removes an annotation left behind after the
// strategy changed, too.
func Resume(ctx context.Context, c client.Client, key types.NamespacedName) (Result, error) {
	return pauseOrResume(ctx, c, key, false)
}

func pauseOrResume(ctx context.Context, c client.Client, key types.NamespacedName, pause bool) (Result, error) {
	set, err := getApplicationSet(ctx, c, key)
	if err != nil {
		return Result{}, err
	}
	write, message, err := planPause(set, pause)
	if err != nil {
		return Result{}, err
	}
	if write {
		var value *string
		if pause {
			v := "true"
			value = &v
		}
		if err := annotateApplicationSet(ctx, c, set, navarchv1.AnnotationRolloutPaused, value); err != nil {
			return Result{}, err
		}
	}
	return Result{ApplicationSet: set, Changed: write, Message: message}, nil
}

// promotion is what Promote does: write the annotation for step, or only say message.
type promotion struct {
	step    int32
	write   bool
	message string
}

// planPromotion picks the step Promote approves: requested, or when that is 0 the step the
// rollout waits on. It refuses a set without RollingSync, a step outside the steps or one
// that needs no approval, and a default when nothing waits for approval.
func planPromotion(set *navarchv1.ApplicationSet, requested int32) (promotion, error) {
	key := client.ObjectKeyFromObject(set)
	steps, ok := RollingSteps(set)
	if !ok {
		return promotion{}, refused(errors.New(NoRollingSync(set, "promote")))
	}
	r := set.Status.Rollout
	step := requested
	if step == 0 {
		if r == nil || r.Phase != navarchv1.RolloutPhaseWaitingForApproval {
			return promotion{}, refused(fmt.Errorf("the rollout of ApplicationSet %s waits for no approval (%s); to approve a later step ahead of time, give it with --step N",
				key, rolloutWhere(r, len(steps))))
		}
		step = r.Step
	}
	if step < 1 || int(step) > len(steps) {
		return promotion{}, refused(fmt.Errorf("ApplicationSet %s has no step %d: its rollout has steps 1 to %d", key, step, len(steps)))
	}
	if !steps[step-1].RequireApproval {
		return promotion{}, refused(fmt.Errorf("step %d of ApplicationSet %s does not require approval (spec.strategy.rollingSync.steps[%d].requireApproval is false)",
			step, key, step-1))
	}
	if r != nil && slices.Contains(r.ApprovedSteps, step) {
		return promotion{step: step, message: fmt.Sprintf("Step %d of %d of ApplicationSet %s is already approved; nothing to do.", step, len(steps), key)}, nil
	}
	return promotion{step: step, write: true, message: fmt.Sprintf(
		"Approved step %d of %d (%s) of ApplicationSet %s with %s=%d; the controller records the approval and removes the annotation.\nFollow the rollout with: navarch appset rollout %s -n %s -w",
		step, len(steps), StepSelector(steps[step-1].MatchExpressions), key, navarchv1.AnnotationPromote, step, set.Name, set.Namespace)}, nil
}

// rolloutWhere says where a rollout is, for messages: "it is Progressing at step 2 of 3".
func rolloutWhere(r *navarchv1.RolloutStatus, steps int) string {
	switch {
	case r == nil || r.Phase == "":
		return "the controller has not started it yet"
	case r.Phase == navarchv1.RolloutPhaseCompleted:
		return "it is Completed"
	}
	return fmt.Sprintf("it is %s at step %d of %d", r.Phase, r.Step, steps)
}

// planPause decides what Pause (or Resume) does: whether to write the annotation, and what to
// say. Pausing needs a RollingSync strategy; resuming always removes the annotation, so that
// one left behind after the strategy changed can be cleaned up.
func planPause(set *navarchv1.ApplicationSet, pause bool) (write bool, message string, err error) {
	key := client.ObjectKeyFromObject(set)
	_, paused := set.Annotations[navarchv1.AnnotationRolloutPaused]
	_, rolling := RollingSteps(set)
	resume := fmt.Sprintf("navarch appset resume %s -n %s", set.Name, set.Namespace)
	switch {
	case pause && paused:
		return false, fmt.Sprintf("The rollout of ApplicationSet %s is already paused (%s); nothing to do. Resume it with: %s",
			key, navarchv1.AnnotationRolloutPaused, resume), nil
	case pause && !rolling:
		return false, "", refused(errors.New(NoRollingSync(set, "pause")))
	case pause:
		return true, fmt.Sprintf("Paused the rollout of ApplicationSet %s: set %s=true; the controller starts no new sync, syncs already started finish.\nResume it with: %s",
			key, navarchv1.AnnotationRolloutPaused, resume), nil
	case !paused:
		return false, fmt.Sprintf("The rollout of ApplicationSet %s is not paused (no %s annotation); nothing to do.",
			key, navarchv1.AnnotationRolloutPaused), nil
	}
	return true, fmt.Sprintf("Resumed the rollout of ApplicationSet %s: removed %s; the controller goes on where it stopped.\nFollow it with: navarch appset rollout %s -n %s -w",
		key, navarchv1.AnnotationRolloutPaused, set.Name, set.Namespace), nil
}

// RollingSteps are the RollingSync steps of set; ok is false when it has no RollingSync
// strategy.
func RollingSteps(set *navarchv1.ApplicationSet) (steps []navarchv1.RollingSyncStep, ok bool) {
	st := set.Spec.Strategy
	if st == nil || st.Type != navarchv1.StrategyRollingSync || st.RollingSync == nil {
		return nil, false
	}
	return st.RollingSync.Steps, true
}

// StepCounts counts the Applications of each rollout step (keyed by status.applicationStatus[].step,
// the step's number as a string) by their rollout state.
func StepCounts(set *navarchv1.ApplicationSet) map[string]map[navarchv1.RolloutApplicationState]int {
	counts := map[string]map[navarchv1.RolloutApplicationState]int{}
	for _, a := range set.Status.ApplicationStatus {
		if counts[a.Step] == nil {
			counts[a.Step] = map[navarchv1.RolloutApplicationState]int{}
		}
		counts[a.Step][a.Status]++
	}
	return counts
}

// NoRollingSync says that set has no rollout to act on; what is the verb: show, promote, pause.
func NoRollingSync(set *navarchv1.ApplicationSet, what string) string {
	typ := navarchv1.StrategyAllAtOnce
	if set.Spec.Strategy != nil && set.Spec.Strategy.Type != "" {
		typ = set.Spec.Strategy.Type
	}
	return fmt.Sprintf("ApplicationSet %s has no RollingSync strategy (spec.strategy.type is %s): there is no rollout to %s",
		client.ObjectKeyFromObject(set), typ, what)
}

// StepSelector writes a step's matchExpressions as "env In (dev,staging), tier Exists".
func StepSelector(exprs []metav1.LabelSelectorRequirement) string {
	if len(exprs) == 0 {
		return "(every Application)"
	}
	parts := make([]string, len(exprs))
	for i, e := range exprs {
		parts[i] = e.Key + " " + string(e.Operator)
		if len(e.Values) > 0 {
			parts[i] += " (" + strings.Join(e.Values, ",") + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// getApplicationSet reads the ApplicationSet; the error wraps the API server's, so a missing
// one is apierrors.IsNotFound.
func getApplicationSet(ctx context.Context, c client.Client, key types.NamespacedName) (*navarchv1.ApplicationSet, error) {
	set := &navarchv1.ApplicationSet{}
	if err := c.Get(ctx, key, set); err != nil {
		return nil, fmt.Errorf("get ApplicationSet %s: %w", key, err)
	}
	return set, nil
}

// annotationPatch is a JSON merge patch of one annotation and nothing else; a nil value
// removes it.
func annotationPatch(key string, value *string) []byte {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{key: value}}})
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return data
}

// annotateApplicationSet sets (or, with a nil value, removes) one annotation of set with a
// merge patch of that annotation only, so that it never overwrites what the controller or
// anyone else wrote meanwhile.
func annotateApplicationSet(ctx context.Context, c client.Client, set *navarchv1.ApplicationSet, key string, value *string) error {
	if err := c.Patch(ctx, set, client.RawPatch(types.MergePatchType, annotationPatch(key, value))); err != nil {
		return fmt.Errorf("annotate ApplicationSet %s: %w", client.ObjectKeyFromObject(set), err)
	}
	return nil
}
