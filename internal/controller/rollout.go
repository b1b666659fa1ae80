package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	fleetsource "github.com/navarch-io/navarch/fleet/source"
)

// A RollingSync rollout, run by the ApplicationSet controller in each pass after the
// Applications are written:
//
//   - Generated Applications carry no automated sync policy: the rollout starts their syncs,
//     with the prune setting, sync options and retry of the template's automated policy.
//   - Each Application belongs to the first step whose matchExpressions match its labels. Its
//     state (Waiting, Pending, Progressing, Healthy, Failed) is computed from its live status
//     against the revision being rolled out: status from before that revision never counts.
//   - Steps run in order. The current step starts syncs of its Waiting Applications while
//     fewer than maxUpdate of them are Pending or Progressing; it is done when all its
//     Applications are Healthy (at most maxFailures Failed) and have been for minSuccessTime.
//     The next step starts in the same pass: Application events drive the rollout, timers
//     only the soak and the deadline.
//   - A new revision (the set of revisions the Applications compare against changes) restarts
//     the rollout from the first step.
//   - Each Application resolves its branch when it is compared, so after a push the
//     Applications of one source see the new commit one by one, a later step's maybe first.
//     The rollout asks them all to compare again, and never syncs a commit to a step before
//     every Application of the earlier steps with that source compares against it.
//   - A sync the rollout requested is not requested again once it succeeded, while the
//     Application is not yet compared as Synced: the status that ends a sync carries the
//     comparison from before it.
//
// The state is kept in status.applicationStatus and status.rollout, written only when it
// changes, so a rollout that waits costs no writes.

// pendingTimeout is how long a requested sync may show no sign of starting before it is
// requested again (the request was lost, e.g. the Application was replaced).
const pendingTimeout = time.Minute

// rollingSync reports whether set rolls out step by step.
func rollingSync(set *navarchv1.ApplicationSet) bool {
	st := set.Spec.Strategy
	return st != nil && st.Type == navarchv1.StrategyRollingSync && st.RollingSync != nil
}

// syncSettings is what a rollout's sync of one Application uses: the automated policy its
// template asked for, which the generated Application does not carry.
type syncSettings struct {
	prune   bool
	options []navarchv1.SyncOption
	retry   *navarchv1.RetryStrategy
}

// withoutAutomatedSync removes the automated sync policy of a generated Application under a
// rollout, and returns the settings its syncs must use.
func withoutAutomatedSync(app *navarchv1.Application) syncSettings {
	sp := app.Spec.SyncPolicy
	if sp == nil {
		return syncSettings{}
	}
	s := syncSettings{options: sp.SyncOptions, retry: sp.Retry}
	if sp.Automated != nil {
		s.prune = sp.Automated.Prune
		sp.Automated = nil
	}
	return s
}

// step is a compiled rollout step.
type step struct {
	selector         labels.Selector
	maxUpdate        *intstr.IntOrString
	maxFailures      *intstr.IntOrString
	minSuccessTime   time.Duration
	progressDeadline time.Duration
	requireApproval  bool
}

// compileSteps checks the steps and compiles their selectors; errors name the field.
func compileSteps(set *navarchv1.ApplicationSet) ([]step, error) {
	var out []step
	for i, s := range set.Spec.Strategy.RollingSync.Steps {
		field := fmt.Sprintf("spec.strategy.rollingSync.steps[%d]", i)
		sel := labels.NewSelector()
		for j, e := range s.MatchExpressions {
			op, ok := map[metav1.LabelSelectorOperator]selection.Operator{
				metav1.LabelSelectorOpIn: selection.In, metav1.LabelSelectorOpNotIn: selection.NotIn,
				metav1.LabelSelectorOpExists: selection.Exists, metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
			}[e.Operator]
			if !ok {
				return nil, fmt.Errorf("%s.matchExpressions[%d].operator: %q is not In, NotIn, Exists or DoesNotExist", field, j, e.Operator)
			}
			req, err := labels.NewRequirement(e.Key, op, e.Values)
			if err != nil {
				return nil, fmt.Errorf("%s.matchExpressions[%d]: %w", field, j, err)
			}
			sel = sel.Add(*req)
		}
		for name, v := range map[string]*intstr.IntOrString{"maxUpdate": s.MaxUpdate, "maxFailures": s.MaxFailures} {
			if _, err := scaled(v, 10, 0); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", field, name, err)
			}
		}
		st := step{selector: sel, maxUpdate: s.MaxUpdate, maxFailures: s.MaxFailures, requireApproval: s.RequireApproval}
		if s.MinSuccessTime != nil {
			st.minSuccessTime = s.MinSuccessTime.Duration
		}
		if s.ProgressDeadline != nil {
			st.progressDeadline = s.ProgressDeadline.Duration
		}
		out = append(out, st)
	}
	return out, nil
}

// scaled resolves a count or percentage of total; nil is def. A percentage rounds down, but
// never below 1 when it is above 0%.
func scaled(v *intstr.IntOrString, total, def int) (int, error) {
	if v == nil {
		return def, nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, fmt.Errorf("must not be negative, not %d", v.IntVal)
		}
		return int(v.IntVal), nil
	}
	s := v.StrVal
	pct, isPct := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(pct)
	if err != nil || n < 0 || (isPct && n > 100) {
		return 0, fmt.Errorf("must be a count such as 2 or a percentage from 0%% to 100%%, not %q", s)
	}
	if !isPct {
		return n, nil
	}
	count := int(math.Floor(float64(total) * float64(n) / 100))
	if count == 0 && n > 0 && total > 0 {
		count = 1
	}
	return count, nil
}

// stepOf returns the 0-based step of an Application, or -1 when no step matches it.
func stepOf(steps []step, app *navarchv1.Application) int {
	for i, s := range steps {
		if s.selector.Matches(labels.Set(app.Labels)) {
			return i
		}
	}
	return -1
}

// member is one generated Application in a rollout pass.
type member struct {
	name     string
	step     int                    // -1: no step
	live     *navarchv1.Application // nil until created
	source   revisionSource
	settings syncSettings
	state    navarchv1.RolloutApplicationStatus
}

// revisionSource identifies the Applications whose commit is one resolution of one branch
// (or tag): the same repository and targetRevision.
type revisionSource struct{ repoURL, revision string }

// revisionSourceOf is the revision source of an Application: with several sources, all of
// them together.
func revisionSourceOf(spec *navarchv1.ApplicationSpec) revisionSource {
	var s revisionSource
	for i, src := range spec.GetSources() {
		if i > 0 {
			s.repoURL, s.revision = s.repoURL+" ", s.revision+" "
		}
		s.repoURL += src.RepoURL + "|" + src.Chart
		s.revision += src.TargetRevision
	}
	return s
}

// rolloutPass is one evaluation of a rollout.
type rolloutPass struct {
	r       *ApplicationSetReconciler
	set     *navarchv1.ApplicationSet
	steps   []step
	members []*member
	now     metav1.Time
	// requeue is when a timer (soak, deadline, a lost request) needs another pass.
	requeue time.Duration
	// verifying: the rollout was completed and its steps are checked again, without a soak.
	verifying bool
}

// rollout runs the RollingSync rollout of set over its generated Applications (rendered, with
// the labels that place them in steps; live holds the live ones by name; settings the sync
// settings of each). It updates set's rollout status and condition, starts the syncs the
// current step allows, and returns when a timer needs another pass (0: Application events
// will bring it).
func (r *ApplicationSetReconciler) rollout(ctx context.Context, set *navarchv1.ApplicationSet, rendered []*navarchv1.Application,
	settings map[string]syncSettings, live map[string]*navarchv1.Application) time.Duration {
	steps, err := compileSteps(set)
	if err != nil {
		setCondition(set, navarchv1.ApplicationSetRolloutProgressing, false, navarchv1.ReasonInvalidStrategy, err.Error())
		return 0
	}
	p := &rolloutPass{r: r, set: set, steps: steps, now: metav1.Now()}
	previous := map[string]navarchv1.RolloutApplicationStatus{}
	for _, s := range set.Status.ApplicationStatus {
		previous[s.Application] = s
	}
	for _, app := range rendered {
		m := &member{name: app.Name, live: live[app.Name], settings: settings[app.Name], step: stepOf(steps, app),
			source: revisionSourceOf(&app.Spec)}
		m.state = p.observe(m, previous[app.Name])
		p.members = append(p.members, m)
	}
	p.advance(ctx)

	statuses := make([]navarchv1.RolloutApplicationStatus, 0, len(p.members))
	for _, m := range p.members {
		statuses = append(statuses, m.state)
	}
	slices.SortFunc(statuses, func(a, b navarchv1.RolloutApplicationStatus) int {
		return strings.Compare(a.Application, b.Application)
	})
	set.Status.ApplicationStatus = statuses
	return p.requeue
}

// revisionsDigest is a digest of the revisions the Applications compare against: a new
// commit changes it.
func (p *rolloutPass) revisionsDigest() string {
	var revs []string
	for _, m := range p.members {
		if m.state.TargetRevision != "" && !slices.Contains(revs, m.state.TargetRevision) {
			revs = append(revs, m.state.TargetRevision)
		}
	}
	slices.Sort(revs)
	sum := sha256.Sum256([]byte(strings.Join(revs, "\n")))
	return hex.EncodeToString(sum[:8])
}

// newRevision reports whether an Application compares with a revision that no Application
// did in the previous pass: a new commit, rather than Applications catching up.
func (p *rolloutPass) newRevision() bool {
	known := map[string]bool{}
	for _, s := range p.set.Status.ApplicationStatus {
		known[s.TargetRevision] = true
	}
	for _, m := range p.members {
		if r := m.state.TargetRevision; r != "" && !known[r] {
			return true
		}
	}
	return false
}

// observe computes an Application's rollout state from its live status and its previous
// state.
func (p *rolloutPass) observe(m *member, prev navarchv1.RolloutApplicationStatus) navarchv1.RolloutApplicationStatus {
	s := navarchv1.RolloutApplicationStatus{Application: m.name}
	if m.step >= 0 {
		s.Step = strconv.Itoa(m.step + 1)
	}
	set := func(state navarchv1.RolloutApplicationState, msg string) navarchv1.RolloutApplicationStatus {
		s.Status, s.Message = state, msg
		s.LastTransitionTime = prev.LastTransitionTime
		if prev.Status != state || prev.LastTransitionTime == nil || prev.TargetRevision != s.TargetRevision {
			s.LastTransitionTime = &p.now
		}
		return s
	}
	app := m.live
	if app == nil {
		return set(navarchv1.RolloutWaiting, "not created yet")
	}
	st := app.Status
	s.TargetRevision = st.Sync.Revision
	if m.step < 0 {
		return set(navarchv1.RolloutWaiting, "matched by no step of spec.strategy.rollingSync: the rollout never syncs it")
	}
	if s.TargetRevision == "" {
		return set(navarchv1.RolloutWaiting, "not compared with its source yet")
	}
	op := st.OperationState
	requested := prev.Status == navarchv1.RolloutPending || prev.Status == navarchv1.RolloutProgressing
	startedSinceRequest := op != nil && prev.LastTransitionTime != nil && !op.StartedAt.Before(prev.LastTransitionTime)
	atTarget := st.Sync.Status == navarchv1.SyncStatusSynced && st.Sync.Revision == s.TargetRevision
	// A sync of the target that succeeded since the rollout requested it (or, after a crash
	// between the request and the status that records it, since it began to wait for it).
	syncedTarget := op != nil && op.Phase == navarchv1.OperationSucceeded && op.SyncResult != nil && op.SyncResult.Revision == s.TargetRevision &&
		prev.TargetRevision == s.TargetRevision && (requested || (prev.Status == navarchv1.RolloutWaiting && startedSinceRequest))
	switch {
	case op != nil && (op.Phase == navarchv1.OperationRunning || op.Phase == navarchv1.OperationTerminating):
		return set(navarchv1.RolloutProgressing, "syncing: "+oneLine(op.Message))
	case app.Operation != nil:
		return set(navarchv1.RolloutPending, "sync requested")
	case atTarget && st.Health.Status == navarchv1.HealthHealthy:
		return set(navarchv1.RolloutHealthy, "Synced and Healthy at "+fleetsource.ShortRevision(s.TargetRevision))
	case atTarget && st.Health.Status == navarchv1.HealthDegraded:
		return set(navarchv1.RolloutFailed, "Degraded: "+oneLine(st.Health.Message))
	case requested && startedSinceRequest && (op.Phase == navarchv1.OperationFailed || op.Phase == navarchv1.OperationError):
		return set(navarchv1.RolloutFailed, "sync failed after its retries: "+oneLine(op.Message))
	case prev.Status == navarchv1.RolloutFailed && prev.TargetRevision == s.TargetRevision && !atTarget:
		return set(navarchv1.RolloutFailed, prev.Message)
	case atTarget:
		return set(navarchv1.RolloutProgressing, fmt.Sprintf("Synced, %s", orUnknown(string(st.Health.Status))))
	case syncedTarget:
		// The status write that ends a sync carries the comparison made before the sync applied
		// anything; the next comparison shows its result. Syncing again now would sync the
		// commit twice (and, were it never to compare as Synced, forever).
		return set(navarchv1.RolloutProgressing, fmt.Sprintf("synced %s, compared as %s: waits for a comparison showing it Synced",
			fleetsource.ShortRevision(s.TargetRevision), orUnknown(string(st.Sync.Status))))
	case prev.Status == navarchv1.RolloutPending && prev.TargetRevision == s.TargetRevision && !startedSinceRequest:
		// The request may not be in the cache yet, or the sync not begun: wait for a sign of
		// it, and ask again if none comes.
		if age := p.now.Sub(prev.LastTransitionTime.Time); age < pendingTimeout {
			p.wake(pendingTimeout - age)
			return set(navarchv1.RolloutPending, "sync requested")
		}
		return set(navarchv1.RolloutWaiting, "the requested sync did not start within "+pendingTimeout.String()+": requesting it again")
	}
	return set(navarchv1.RolloutWaiting, fmt.Sprintf("%s at %s: waits for its step", orUnknown(string(st.Sync.Status)), fleetsource.ShortRevision(s.TargetRevision)))
}

// wake asks for another pass within d.
func (p *rolloutPass) wake(d time.Duration) {
	if d <= 0 {
		d = time.Millisecond
	}
	if p.requeue == 0 || d < p.requeue {
		p.requeue = d
	}
}

// advance moves the rollout through its steps: it restarts it on a new revision, completes
// the steps that are done, and starts the syncs the current step allows.
func (p *rolloutPass) advance(ctx context.Context) {
	set := p.set
	ro := set.Status.Rollout
	if ro == nil {
		ro = &navarchv1.RolloutStatus{}
		set.Status.Rollout = ro
	}
	digest := p.revisionsDigest()
	switch {
	case ro.Revisions == digest:
	case ro.Revisions != "" && !p.newRevision():
		// Only revisions went away: the Applications that lagged behind now compare with the
		// commit the others already had. The same rollout goes on.
		ro.Revisions = digest
	default:
		var restarted *metav1.Time
		if ro.Revisions != "" && ro.Phase != navarchv1.RolloutPhaseCompleted {
			p.event(corev1.EventTypeNormal, "RolloutRestarted", "new revisions %s: the rollout restarts from step 1", p.revisionList())
			restarted = &p.now
		}
		*ro = navarchv1.RolloutStatus{Revisions: digest, Step: 1, StepStartedAt: &p.now, RestartedAt: restarted}
		p.converge(ctx)
	}
	if ro.Step < 1 {
		ro.Step, ro.StepStartedAt = 1, &p.now
	}
	p.approve()
	_, paused := set.Annotations[navarchv1.AnnotationRolloutPaused]

	// A completed rollout is checked again from its first step, quietly and without a new
	// soak: an Application added since (a new cluster) must still be rolled out.
	p.verifying = ro.Phase == navarchv1.RolloutPhaseCompleted
	if p.verifying {
		ro.Step = 1
	}
	for int(ro.Step) <= len(p.steps) {
		i := int(ro.Step) - 1
		done, halted, msg := p.runStep(ctx, i, paused)
		if !done && p.verifying {
			// Work found in a completed rollout: the step runs again.
			p.verifying = false
			ro.StepStartedAt, ro.StepHealthyAt = &p.now, nil
			p.event(corev1.EventTypeNormal, "RolloutStepStarted", "step %d of %d started again: %s", ro.Step, len(p.steps), msg)
			done, halted, msg = p.runStep(ctx, i, paused)
		}
		if halted {
			if ro.Phase != navarchv1.RolloutPhaseHalted {
				p.event(corev1.EventTypeWarning, "RolloutHalted", "%s", msg)
			}
			p.setPhase(navarchv1.RolloutPhaseHalted, msg)
			return
		}
		if !done {
			switch {
			case paused:
				p.setPhase(navarchv1.RolloutPhasePaused, fmt.Sprintf("paused (annotation %s) at step %d of %d: %s", navarchv1.AnnotationRolloutPaused, ro.Step, len(p.steps), msg))
			case p.steps[i].requireApproval && !slices.Contains(ro.ApprovedSteps, ro.Step) && p.stepHasWork(i):
				p.setPhase(navarchv1.RolloutPhaseWaitingForApproval, msg)
			default:
				p.setPhase(navarchv1.RolloutPhaseProgressing, msg)
			}
			return
		}
		ro.Step++
		if p.verifying {
			continue
		}
		p.event(corev1.EventTypeNormal, "RolloutStepCompleted", "step %d of %d completed", ro.Step-1, len(p.steps))
		ro.StepStartedAt, ro.StepHealthyAt = &p.now, nil
		if int(ro.Step) <= len(p.steps) {
			p.event(corev1.EventTypeNormal, "RolloutStepStarted", "step %d of %d started", ro.Step, len(p.steps))
		}
	}
	ro.Step = int32(len(p.steps))
	if ro.Phase != navarchv1.RolloutPhaseCompleted {
		p.event(corev1.EventTypeNormal, "RolloutCompleted", "all %d steps done at %s", len(p.steps), p.revisionList())
	}
	p.setPhase(navarchv1.RolloutPhaseCompleted, fmt.Sprintf("all %d steps done at %s%s", len(p.steps), p.revisionList(), p.unmatched()))
}

// approve records a promotion requested with the navarch.io/promote annotation (the caller
// removes the annotation once the status is written).
func (p *rolloutPass) approve() {
	v, ok := p.set.Annotations[navarchv1.AnnotationPromote]
	if !ok {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > len(p.steps) {
		p.event(corev1.EventTypeWarning, "RolloutPromoteRefused", "%s=%q is not a step from 1 to %d", navarchv1.AnnotationPromote, v, len(p.steps))
		return
	}
	ro := p.set.Status.Rollout
	if !slices.Contains(ro.ApprovedSteps, int32(n)) {
		ro.ApprovedSteps = append(ro.ApprovedSteps, int32(n))
		slices.Sort(ro.ApprovedSteps)
		if int32(n) == ro.Step {
			ro.StepStartedAt = &p.now // the step starts now: its deadline counts from here
		}
		p.event(corev1.EventTypeNormal, "RolloutStepPromoted", "step %d promoted", n)
	}
}

// stepHasWork reports whether any Application of step i is not Healthy.
func (p *rolloutPass) stepHasWork(i int) bool {
	for _, m := range p.members {
		if m.step == i && m.state.Status != navarchv1.RolloutHealthy {
			return true
		}
	}
	return false
}

// runStep evaluates step i: done when its Applications are Healthy (but for the failures
// allowed) and soaked; halted when it has more failures than allowed or passed its
// deadline. Otherwise it starts the syncs maxUpdate allows, and says what it waits for.
func (p *rolloutPass) runStep(ctx context.Context, i int, paused bool) (done, halted bool, msg string) {
	s, ro := p.steps[i], p.set.Status.Rollout
	var members, waiting []*member
	counts := map[navarchv1.RolloutApplicationState]int{}
	var failed []string
	for _, m := range p.members {
		if m.step != i {
			continue
		}
		members = append(members, m)
		counts[m.state.Status]++
		switch m.state.Status {
		case navarchv1.RolloutWaiting:
			waiting = append(waiting, m)
		case navarchv1.RolloutFailed:
			failed = append(failed, m.name+" ("+m.state.Message+")")
		}
	}
	n := i + 1
	allowed, _ := scaled(s.maxFailures, len(members), 0)
	if len(failed) > allowed {
		slices.Sort(failed)
		return false, true, fmt.Sprintf("halted at step %d of %d: %d of its %d Applications failed (maxFailures %d): %s; later steps are untouched. A new commit restarts the rollout",
			n, len(p.steps), len(failed), len(members), allowed, strings.Join(failed, "; "))
	}
	if counts[navarchv1.RolloutHealthy]+len(failed) == len(members) {
		if p.verifying {
			return true, false, ""
		}
		if ro.StepHealthyAt == nil {
			ro.StepHealthyAt = &p.now
		}
		if left := s.minSuccessTime - p.now.Sub(ro.StepHealthyAt.Time); left > 0 {
			p.wake(left)
			return false, false, fmt.Sprintf("step %d of %d: %d Applications Healthy, soaking until %s", n, len(p.steps), len(members),
				ro.StepHealthyAt.Add(s.minSuccessTime).UTC().Format(time.RFC3339))
		}
		return true, false, ""
	}
	if p.verifying {
		return false, false, p.describe(counts)
	}
	ro.StepHealthyAt = nil
	// The deadline counts from the step's start, or from its approval: waiting for a person
	// is not the step's progress.
	if s.requireApproval && !slices.Contains(ro.ApprovedSteps, int32(n)) {
		return false, false, fmt.Sprintf("step %d of %d waits for approval: navarch appset promote %s -n %s --step %d", n, len(p.steps), p.set.Name, p.set.Namespace, n)
	}
	if d := s.progressDeadline; d > 0 {
		left := d - p.now.Sub(ro.StepStartedAt.Time)
		if left <= 0 {
			return false, true, fmt.Sprintf("halted at step %d of %d: not completed within its progressDeadline %s (%s): %s; later steps are untouched. A new commit restarts the rollout",
				n, len(p.steps), d, p.describe(counts), unfinished(members))
		}
		p.wake(left)
	}
	if paused {
		return false, false, p.describe(counts)
	}
	limit, _ := scaled(s.maxUpdate, len(members), len(members))
	if limit == 0 {
		return false, false, fmt.Sprintf("step %d of %d is paused: maxUpdate is 0 (%s)", n, len(p.steps), p.describe(counts))
	}
	inFlight := counts[navarchv1.RolloutPending] + counts[navarchv1.RolloutProgressing]
	for _, m := range waiting {
		if inFlight >= limit {
			break
		}
		if m.live == nil || m.state.TargetRevision == "" {
			continue // not created or not compared yet: nothing to sync to
		}
		if o := p.behind(i, m); o != nil {
			m.state.Message = fmt.Sprintf("at %s, which %s (step %d) does not compare against yet: waits for the earlier steps to have it",
				fleetsource.ShortRevision(m.state.TargetRevision), o.name, o.step+1)
			continue
		}
		if err := p.startSync(ctx, m); err != nil {
			if apierrors.IsConflict(err) {
				// The cache is behind the Application: the event of its newer version brings
				// another pass, which requests the sync against that version.
				ctrl.LoggerFrom(ctx).V(1).Info("Rollout sync not started: the Application changed meanwhile", "application", klog.KObj(m.live))
			} else {
				ctrl.LoggerFrom(ctx).Error(err, "Rollout sync not started; retrying", "application", klog.KObj(m.live))
			}
			p.wake(time.Second)
			continue
		}
		counts[navarchv1.RolloutWaiting]--
		counts[navarchv1.RolloutPending]++
		inFlight++
	}
	return false, false, fmt.Sprintf("step %d of %d: %s (maxUpdate %d)", n, len(p.steps), p.describe(counts), limit)
}

// behind returns an Application of a step before step i, of the same source as m, that does
// not compare against m's commit. Each Application resolves its branch when it is compared, so
// after a push they see the new commit one by one, in no particular order: a later step's
// Application may see it first. It must not get the commit before the earlier steps have it.
func (p *rolloutPass) behind(i int, m *member) *member {
	for _, o := range p.members {
		if o.step >= 0 && o.step < i && o.source == m.source && o.state.TargetRevision != m.state.TargetRevision {
			return o
		}
	}
	return nil
}

// converge asks the Applications of a source whose commits disagree to compare with Git
// again (the navarch.io/refresh annotation, as a push webhook or `navarch app diff
// --refresh` would), so that they all see the newest commit and the rollout takes it through
// every step in order, instead of waiting for each Application's next poll. It runs when the
// set of revisions changes; an Application that cannot compare again (its cluster is down)
// is simply waited for.
func (p *rolloutPass) converge(ctx context.Context) {
	commits := map[revisionSource]map[string]bool{}
	for _, m := range p.members {
		if m.live == nil || m.state.TargetRevision == "" {
			continue
		}
		if commits[m.source] == nil {
			commits[m.source] = map[string]bool{}
		}
		commits[m.source][m.state.TargetRevision] = true
	}
	for _, m := range p.members {
		if len(commits[m.source]) < 2 || m.live == nil {
			continue
		}
		if _, asked := m.live.Annotations[navarchv1.AnnotationRefresh]; asked {
			continue
		}
		app := m.live.DeepCopy()
		patch := client.MergeFrom(m.live.DeepCopy())
		if app.Annotations == nil {
			app.Annotations = map[string]string{}
		}
		app.Annotations[navarchv1.AnnotationRefresh] = p.now.UTC().Format(time.RFC3339)
		if err := p.r.Client.Patch(ctx, app, patch); err != nil {
			// The Application's next poll brings the commit as well; until then the rollout
			// waits for it.
			ctrl.LoggerFrom(ctx).Error(err, "Rollout could not ask an Application to compare again", "application", klog.KObj(app))
			continue
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Rollout asked an Application to compare again", "application", klog.KObj(app),
			"revision", m.state.TargetRevision)
		m.live = app // a sync this pass starts is guarded by the new resourceVersion
	}
}

// unfinished names the Applications of a step that are not Healthy, with their state.
func unfinished(members []*member) string {
	var out []string
	for _, m := range members {
		if m.state.Status != navarchv1.RolloutHealthy {
			out = append(out, fmt.Sprintf("%s (%s: %s)", m.name, m.state.Status, m.state.Message))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func (p *rolloutPass) describe(counts map[navarchv1.RolloutApplicationState]int) string {
	var parts []string
	for _, st := range []navarchv1.RolloutApplicationState{navarchv1.RolloutHealthy, navarchv1.RolloutProgressing, navarchv1.RolloutPending, navarchv1.RolloutWaiting, navarchv1.RolloutFailed} {
		if c := counts[st]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, st))
		}
	}
	if len(parts) == 0 {
		return "no Applications"
	}
	return strings.Join(parts, ", ")
}

// startSync requests a sync of m at the revision rolled out, as automated sync would.
func (p *rolloutPass) startSync(ctx context.Context, m *member) error {
	app := m.live.DeepCopy()
	patch := client.MergeFromWithOptions(m.live.DeepCopy(), client.MergeFromWithOptimisticLock{})
	app.Operation = &navarchv1.Operation{
		Sync: &navarchv1.SyncOperation{
			Revision:    m.state.TargetRevision,
			Prune:       m.settings.prune,
			SyncOptions: m.settings.options,
		},
		InitiatedBy: navarchv1.OperationInitiator{Username: "applicationset/" + p.set.Name, Automated: true},
		Retry:       m.settings.retry,
	}
	if err := p.r.Client.Patch(ctx, app, patch); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Rollout started a sync", "application", klog.KObj(app), "step", m.step+1, "revision", m.state.TargetRevision)
	m.state.Status, m.state.Message, m.state.LastTransitionTime = navarchv1.RolloutPending, "sync requested", &p.now
	return nil
}

// setPhase records the rollout's phase and message and the RolloutProgressing condition.
func (p *rolloutPass) setPhase(phase navarchv1.RolloutPhase, msg string) {
	ro := p.set.Status.Rollout
	if ro.RestartedAt != nil && phase != navarchv1.RolloutPhaseCompleted {
		msg += fmt.Sprintf(" (restarted from step 1 at %s: a new revision arrived mid-rollout)", ro.RestartedAt.UTC().Format(time.RFC3339))
	}
	ro.Phase, ro.Message = phase, msg
	switch phase {
	case navarchv1.RolloutPhaseCompleted:
		setCondition(p.set, navarchv1.ApplicationSetRolloutProgressing, false, navarchv1.ReasonRolloutCompleted, msg)
	case navarchv1.RolloutPhaseHalted:
		setCondition(p.set, navarchv1.ApplicationSetRolloutProgressing, false, navarchv1.ReasonRolloutHalted, msg)
	case navarchv1.RolloutPhaseWaitingForApproval:
		setCondition(p.set, navarchv1.ApplicationSetRolloutProgressing, true, navarchv1.ReasonRolloutWaiting, msg)
	case navarchv1.RolloutPhasePaused:
		setCondition(p.set, navarchv1.ApplicationSetRolloutProgressing, true, navarchv1.ReasonRolloutPaused, msg)
	default:
		setCondition(p.set, navarchv1.ApplicationSetRolloutProgressing, true, navarchv1.ReasonRolloutProgressing, msg+p.unmatched())
	}
}

// unmatched names the Applications no step matches, for the rollout's messages.
func (p *rolloutPass) unmatched() string {
	var names []string
	for _, m := range p.members {
		if m.step < 0 {
			names = append(names, m.name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return fmt.Sprintf("; %d Applications match no step and are never synced by the rollout: %s", len(names), strings.Join(names, ", "))
}

func (p *rolloutPass) revisionList() string {
	var revs []string
	for _, m := range p.members {
		if r := fleetsource.ShortRevision(m.state.TargetRevision); r != "" && !slices.Contains(revs, r) {
			revs = append(revs, r)
		}
	}
	slices.Sort(revs)
	return strings.Join(revs, ", ")
}

// event records a rollout Event on the ApplicationSet, once per transition (the callers
// only call it on transitions).
func (p *rolloutPass) event(typ, reason, format string, args ...any) {
	if p.r.Events == nil {
		return
	}
	p.r.Events.Eventf(p.set, nil, typ, reason, "Rollout", format, args...)
}
