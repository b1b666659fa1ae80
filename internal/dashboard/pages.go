package dashboard

import (
	"cmp"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/actions"
	"github.com/navarch-io/navarch/internal/membership"
)

// fleetView is the fleet page's data.
type fleetView struct {
	Matrix          *matrix
	Filter          filter
	FilterError     string
	States          []stateOption
	ApplicationSets []string
	Projects        []string
}

type stateOption struct {
	Value, Label string
}

func stateOptions() []stateOption {
	opts := []stateOption{{"problem", "Any problem"}}
	for _, s := range states {
		opts = append(opts, stateOption{string(s), stateLabels[s]})
	}
	return opts
}

// fleetData builds the fleet page's data from the cache, for the identity's namespaces.
func (s *Server) fleetData(r *http.Request, f filter) (*fleetView, error) {
	ctx := r.Context()
	id := identityOf(r)
	apps, err := s.store.applications(ctx, s.opts.Namespace)
	if err != nil {
		return nil, err
	}
	apps = s.readable(r, apps)
	clusters, err := s.store.clusters(ctx)
	if err != nil {
		return nil, err
	}
	if !s.clients.canList(ctx, id, "clusters", "") {
		clusters = nil
	}
	sets := map[string]bool{}
	projects := map[string]bool{}
	for _, a := range apps {
		if set := a.Labels[navarchv1.LabelApplicationSet]; set != "" {
			sets[set] = true
		}
		projects[cmp.Or(a.Spec.Project, "default")] = true
	}
	// The filters offer every ApplicationSet and Project, also those without Applications yet.
	if appSets, err := s.store.applicationSets(ctx, s.opts.Namespace); err == nil {
		for _, set := range appSets {
			if s.allowedNamespace(r, "applicationsets", set.Namespace) {
				sets[set.Name] = true
			}
		}
	}
	if ps, err := s.store.projects(ctx, s.opts.Namespace); err == nil {
		for _, p := range ps {
			if s.allowedNamespace(r, "projects", p.Namespace) {
				projects[p.Name] = true
			}
		}
	}
	return &fleetView{
		Matrix:          buildMatrix(apps, clusters, f),
		Filter:          f,
		States:          stateOptions(),
		ApplicationSets: sortedKeys(sets),
		Projects:        sortedKeys(projects),
	}, nil
}

// readable keeps the Applications of the namespaces the requester may list Applications in.
func (s *Server) readable(r *http.Request, apps []*navarchv1.Application) []*navarchv1.Application {
	id := identityOf(r)
	if !id.impersonate {
		return apps
	}
	ok := map[string]bool{}
	return slices.DeleteFunc(slices.Clone(apps), func(a *navarchv1.Application) bool {
		allowed, seen := ok[a.Namespace]
		if !seen {
			allowed = s.clients.canList(r.Context(), id, "applications", a.Namespace)
			ok[a.Namespace] = allowed
		}
		return !allowed
	})
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) {
	f, ferr := parseFilter(r.URL.Query())
	if ferr != nil {
		f = filter{}
	}
	v, err := s.fleetData(r, f)
	if err != nil {
		s.errorPage(w, r, http.StatusInternalServerError, err)
		return
	}
	if ferr != nil {
		v.FilterError = ferr.Error()
	}
	s.render(w, r, http.StatusOK, "fleet", page{Title: "Fleet", Nav: "fleet", Live: true, Query: f.query(), Data: v})
}

// resourceView is one managed resource of an Application.
type resourceView struct {
	navarchv1.ResourceStatus
	State   state
	Health  string
	Message string
}

func (r resourceView) Differs() bool {
	return r.Status == navarchv1.SyncStatusOutOfSync || r.RequiresPruning
}

// taskGroup is one step of an operation's timeline: a phase and wave, with its tasks.
type taskGroup struct {
	Phase string
	Wave  int64
	Tasks []navarchv1.ResourceResult
	State state
}

type applicationView struct {
	App        *navarchv1.Application
	State      state
	StateLabel string
	Resources  []resourceView
	Diff       []resourceView
	Timeline   []taskGroup
	History    []navarchv1.RevisionHistory
	Conditions []conditionView
	Set        string
	Column     string
	Running    bool
	CanAct     bool
}

func (s *Server) applicationPage(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if !s.allowedNamespace(r, "applications", ns) {
		s.errorPage(w, r, http.StatusNotFound, fmt.Errorf("application %s/%s not found", ns, name))
		return
	}
	app := &navarchv1.Application{}
	if err := s.store.get(r.Context(), ns, name, app); err != nil {
		s.errorPage(w, r, statusOf(err), fmt.Errorf("application %s/%s: %w", ns, name, err))
		return
	}
	clusters, _ := s.store.clusters(r.Context())
	v := &applicationView{
		App: app, State: appState(app), Set: app.Labels[navarchv1.LabelApplicationSet],
		Column: column(app, clusters), CanAct: !s.opts.ReadOnly,
	}
	v.StateLabel = stateLabels[v.State]
	for _, res := range app.Status.Resources {
		rv := resourceView{ResourceStatus: res, Health: "—", Message: res.Message, State: stateOK}
		if res.Health != nil {
			rv.Health = string(res.Health.Status)
			if res.Health.Message != "" {
				rv.Message = strings.TrimPrefix(rv.Message+"; "+res.Health.Message, "; ")
			}
		}
		switch {
		case res.Health != nil && res.Health.Status == navarchv1.HealthDegraded:
			rv.State = stateFailed
		case rv.Differs():
			rv.State = stateOutOfSync
		case res.Health != nil && res.Health.Status == navarchv1.HealthProgressing:
			rv.State = stateProgressing
		case res.Status != navarchv1.SyncStatusSynced || (res.Health != nil && res.Health.Status != navarchv1.HealthHealthy):
			rv.State = stateUnknown
		}
		v.Resources = append(v.Resources, rv)
		if rv.Differs() {
			v.Diff = append(v.Diff, rv)
		}
	}
	if op := app.Status.OperationState; op != nil {
		v.Running = op.Phase == navarchv1.OperationRunning || op.Phase == navarchv1.OperationTerminating
		if op.SyncResult != nil {
			v.Timeline = timeline(op.SyncResult.Resources)
		}
	}
	v.History = slices.Clone(app.Status.History)
	slices.Reverse(v.History)
	v.Conditions = conditionViews(app.Status.Conditions, applicationConditionWords)
	s.render(w, r, http.StatusOK, "application", page{Title: "Application " + name, Nav: "fleet", Live: true,
		Watch: "Application/" + ns + "/" + name, Data: v})
}

// syncPhases orders the phases of an operation.
var syncPhases = []navarchv1.SyncPhase{navarchv1.SyncPhasePreSync, navarchv1.SyncPhaseSync, navarchv1.SyncPhasePostSync, navarchv1.SyncPhaseSyncFail}

// timeline groups an operation's task results by phase and wave, in the order they ran.
func timeline(results []navarchv1.ResourceResult) []taskGroup {
	phaseOrder := func(p navarchv1.SyncPhase) int {
		if i := slices.Index(syncPhases, p); i >= 0 {
			return i
		}
		return len(syncPhases)
	}
	sorted := slices.Clone(results)
	slices.SortStableFunc(sorted, func(a, b navarchv1.ResourceResult) int {
		return cmp.Or(cmp.Compare(phaseOrder(a.SyncPhase), phaseOrder(b.SyncPhase)), cmp.Compare(a.SyncWave, b.SyncWave))
	})
	var groups []taskGroup
	for _, t := range sorted {
		phase := string(cmp.Or(t.SyncPhase, navarchv1.SyncPhaseSync))
		if n := len(groups); n == 0 || groups[n-1].Phase != phase || groups[n-1].Wave != t.SyncWave {
			groups = append(groups, taskGroup{Phase: phase, Wave: t.SyncWave, State: stateOK})
		}
		g := &groups[len(groups)-1]
		g.Tasks = append(g.Tasks, t)
		switch {
		case t.Status == navarchv1.ResultSyncFailed || t.HookPhase == navarchv1.HookFailed || t.HookPhase == navarchv1.HookError:
			g.State = stateFailed
		case (t.HookPhase == navarchv1.HookRunning || t.HookPhase == navarchv1.HookPending) && g.State != stateFailed:
			g.State = stateProgressing
		}
	}
	return groups
}

// conditionView is a condition in plain words.
type conditionView struct {
	Type     string
	Words    string
	Message  string
	Problem  bool
	Since    *metav1.Time
	Reason   string
	Positive bool
}

// conditionWord says what a condition means when it is True and when it is False, and which
// of the two is a problem.
type conditionWord struct {
	whenTrue, whenFalse string
	problemWhen         metav1.ConditionStatus
}

var applicationConditionWords = map[string]conditionWord{
	navarchv1.ConditionReady:                   {"Ready: Synced and Healthy", "Not ready", metav1.ConditionFalse},
	navarchv1.ConditionReconciling:             {"The controller is working on it", "The controller is done with it", ""},
	navarchv1.ConditionStalled:                 {"Stuck: the controller cannot make progress without a change", "Not stuck", metav1.ConditionTrue},
	navarchv1.ApplicationComparisonError:       {"Could not compare the cluster with Git", "Compared with Git", metav1.ConditionTrue},
	navarchv1.ApplicationSyncError:             {"The last sync failed", "No sync error", metav1.ConditionTrue},
	navarchv1.ApplicationSharedResourceWarning: {"Another Application manages some of the same resources", "No shared resources", metav1.ConditionTrue},
	navarchv1.ApplicationDeletionError:         {"Could not delete its resources", "No deletion error", metav1.ConditionTrue},
	navarchv1.ApplicationInvalidSpecError:      {"Its spec is invalid", "Spec valid", metav1.ConditionTrue},
	navarchv1.ApplicationSyncBlocked:           {"Syncing is blocked", "Syncing is allowed", metav1.ConditionTrue},
}

var applicationSetConditionWords = map[string]conditionWord{
	navarchv1.ApplicationSetErrorOccurred:       {"An error occurred while generating Applications", "No generator error", metav1.ConditionTrue},
	navarchv1.ApplicationSetParametersGenerated: {"Its generators produced their parameters", "Its generators failed to produce parameters", metav1.ConditionFalse},
	navarchv1.ApplicationSetResourcesUpToDate:   {"Every generated Application is up to date", "Its Applications are not up to date", metav1.ConditionFalse},
	navarchv1.ApplicationSetRolloutProgressing:  {"A rollout is in progress", "No rollout in progress", ""},
	navarchv1.ApplicationSetRateLimited:         {"The SCM provider rate-limits it", "Not rate-limited", metav1.ConditionTrue},
}

var clusterConditionWords = map[string]conditionWord{
	navarchv1.ConditionReady: {"Reachable", "Not reachable", metav1.ConditionFalse},
}

func conditionViews(conds []metav1.Condition, words map[string]conditionWord) []conditionView {
	var out []conditionView
	for _, c := range conds {
		w, known := words[c.Type]
		v := conditionView{Type: c.Type, Message: c.Message, Reason: c.Reason, Positive: c.Status == metav1.ConditionTrue}
		t := c.LastTransitionTime
		v.Since = &t
		switch {
		case known && c.Status == metav1.ConditionTrue:
			v.Words = w.whenTrue
		case known && c.Status == metav1.ConditionFalse:
			v.Words = w.whenFalse
		default:
			v.Words = fmt.Sprintf("%s is %s", c.Type, c.Status)
		}
		v.Problem = known && w.problemWhen != "" && c.Status == w.problemWhen
		if c.Reason != "" && (v.Problem || !known) {
			v.Words += " (" + splitCamel(c.Reason) + ")"
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b conditionView) int { return boolRank(b.Problem) - boolRank(a.Problem) })
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// splitCamel turns a reason such as SyncedAndHealthy into "synced and healthy".
func splitCamel(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			prev := s[i-1]
			if prev < 'A' || prev > 'Z' {
				b.WriteByte(' ')
			}
		}
		b.WriteRune(r)
	}
	return strings.ToLower(b.String())
}

// generatedApp is one Application of an ApplicationSet.
type generatedApp struct {
	App         *navarchv1.Application
	Cluster     string
	State       state
	PullRequest *pullRequest
	Rollout     *navarchv1.RolloutApplicationStatus
}

// pullRequest is a preview's pull request, from the navarch.io/pull-request annotation
// "<owner>/<repo>#<number>@<head sha>".
type pullRequest struct {
	Repo, Number, SHA string
	// CommitStatus is the state navarch reports for the preview on the head commit, when
	// the ApplicationSet writes commit statuses; Context is the status's name.
	CommitStatus, Context string
}

func parsePullRequest(v string) *pullRequest {
	repo, rest, ok := strings.Cut(v, "#")
	if !ok {
		return nil
	}
	number, sha, _ := strings.Cut(rest, "@")
	return &pullRequest{Repo: repo, Number: number, SHA: sha}
}

// commitStatusOf is the commit status navarch writes for a preview: pending while it syncs,
// success once Synced and Healthy, failure when Degraded or its sync failed.
func commitStatusOf(app *navarchv1.Application) string {
	switch appState(app) {
	case stateOK:
		return "success"
	case stateFailed:
		return "failure"
	}
	return "pending"
}

// stepView is one rollout step.
type stepView struct {
	Number    int32
	Selector  string
	MaxUpdate string
	Soak      string
	Approval  string
	Counts    string
	State     string
	CanAct    bool
	Promote   bool
}

type applicationSetView struct {
	Set          *navarchv1.ApplicationSet
	Apps         []generatedApp
	Conditions   []conditionView
	Errors       []conditionView
	Rolling      bool
	Steps        []stepView
	Rollout      *navarchv1.RolloutStatus
	Paused       bool
	Previews     []generatedApp
	CommitStatus *navarchv1.CommitStatus
	CanAct       bool
	Health       string
}

func (s *Server) applicationSetPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if !s.allowedNamespace(r, "applicationsets", ns) {
		s.errorPage(w, r, http.StatusNotFound, fmt.Errorf("applicationSet %s/%s not found", ns, name))
		return
	}
	set := &navarchv1.ApplicationSet{}
	if err := s.store.get(ctx, ns, name, set); err != nil {
		s.errorPage(w, r, statusOf(err), fmt.Errorf("applicationSet %s/%s: %w", ns, name, err))
		return
	}
	apps, err := s.store.applications(ctx, ns)
	if err != nil {
		s.errorPage(w, r, http.StatusInternalServerError, err)
		return
	}
	if !s.allowedNamespace(r, "applications", ns) {
		apps = nil
	}
	clusters, _ := s.store.clusters(ctx)
	v := &applicationSetView{Set: set, CanAct: !s.opts.ReadOnly}
	if set.Status.Health != nil {
		v.Health = string(set.Status.Health.Status)
	}
	v.CommitStatus = commitStatusConfig(set.Spec.Generators)
	rollout := map[string]*navarchv1.RolloutApplicationStatus{}
	for i := range set.Status.ApplicationStatus {
		a := &set.Status.ApplicationStatus[i]
		rollout[a.Application] = a
	}
	for _, a := range apps {
		if a.Labels[navarchv1.LabelApplicationSet] != name {
			continue
		}
		g := generatedApp{App: a, Cluster: column(a, clusters), State: appState(a), Rollout: rollout[a.Name]}
		if pr, ok := a.Annotations[navarchv1.AnnotationPullRequest]; ok {
			g.PullRequest = parsePullRequest(pr)
			if g.PullRequest != nil && v.CommitStatus != nil {
				g.PullRequest.CommitStatus = commitStatusOf(a)
				g.PullRequest.Context = cmp.Or(v.CommitStatus.Context, "navarch") + "/" + a.Name
			}
		}
		v.Apps = append(v.Apps, g)
		if g.PullRequest != nil {
			v.Previews = append(v.Previews, g)
		}
	}
	slices.SortFunc(v.Apps, func(a, b generatedApp) int {
		return cmp.Or(cmp.Compare(b.State.rank(), a.State.rank()), strings.Compare(a.App.Name, b.App.Name))
	})
	v.Conditions = conditionViews(set.Status.Conditions, applicationSetConditionWords)
	for _, c := range v.Conditions {
		if c.Problem {
			v.Errors = append(v.Errors, c)
		}
	}
	if st := set.Spec.Strategy; st != nil && st.Type == navarchv1.StrategyRollingSync && st.RollingSync != nil {
		v.Rolling = true
		v.Rollout = set.Status.Rollout
		_, v.Paused = set.Annotations[navarchv1.AnnotationRolloutPaused]
		v.Steps = stepViews(set, st.RollingSync.Steps, v.CanAct)
	}
	s.render(w, r, http.StatusOK, "applicationset", page{Title: "ApplicationSet " + name, Nav: "fleet", Live: true,
		Watch: "ApplicationSet/" + ns + "/" + name + " Application/" + ns, Data: v})
}

// commitStatusConfig finds the commitStatus of the set's pullRequest generator, if any.
func commitStatusConfig(gens []navarchv1.ApplicationSetGenerator) *navarchv1.CommitStatus {
	for _, g := range gens {
		if pr := g.PullRequest; pr != nil && pr.Github != nil && pr.Github.CommitStatus != nil {
			return pr.Github.CommitStatus
		}
		if g.Matrix != nil {
			for _, n := range g.Matrix.Generators {
				if pr := n.PullRequest; pr != nil && pr.Github != nil && pr.Github.CommitStatus != nil {
					return pr.Github.CommitStatus
				}
			}
		}
	}
	return nil
}

// stepViews describes each rollout step as `navarch appset rollout` does.
func stepViews(set *navarchv1.ApplicationSet, steps []navarchv1.RollingSyncStep, canAct bool) []stepView {
	counts := actions.StepCounts(set)
	r := set.Status.Rollout
	var out []stepView
	for i, step := range steps {
		n := int32(i + 1)
		v := stepView{Number: n, Selector: actions.StepSelector(step.MatchExpressions), MaxUpdate: "all", Soak: "—", Approval: "—"}
		if step.MaxUpdate != nil {
			v.MaxUpdate = step.MaxUpdate.String()
		}
		if step.MinSuccessTime != nil {
			v.Soak = step.MinSuccessTime.Duration.String()
		}
		if step.RequireApproval {
			switch {
			case r != nil && slices.Contains(r.ApprovedSteps, n):
				v.Approval = "approved"
			case set.Annotations[navarchv1.AnnotationPromote] == strconv.Itoa(int(n)):
				v.Approval = "requested"
			default:
				v.Approval = "required"
			}
		}
		var parts []string
		for _, st := range []navarchv1.RolloutApplicationState{navarchv1.RolloutWaiting, navarchv1.RolloutPending,
			navarchv1.RolloutProgressing, navarchv1.RolloutHealthy, navarchv1.RolloutFailed} {
			if c := counts[strconv.Itoa(int(n))][st]; c > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", c, st))
			}
		}
		v.Counts = cmp.Or(strings.Join(parts, ", "), "—")
		switch {
		case r == nil || r.Phase == "":
			v.State = "waiting"
		case r.Phase == navarchv1.RolloutPhaseCompleted || n < r.Step:
			v.State = "done"
		case n == r.Step && r.Phase == navarchv1.RolloutPhaseHalted:
			v.State = "halted"
		case n == r.Step:
			v.State = "current"
		default:
			v.State = "waiting"
		}
		v.Promote = canAct && r != nil && n == r.Step && r.Phase == navarchv1.RolloutPhaseWaitingForApproval && v.Approval == "required"
		v.CanAct = canAct
		out = append(out, v)
	}
	return out
}

// clusterView is one Cluster.
type clusterView struct {
	Cluster    *navarchv1.Cluster
	ID         string
	Ready      string
	State      state
	Conditions []conditionView
	Labels     []string
	Replica    string
	Apps       int
	NotOK      int
}

// ownerReplica names the controller replica that syncs a Cluster, from the Cluster Leases
// of replicas sharing the fleet (docs/scaling.md); "—" when none holds one.
func ownerReplica(c *navarchv1.Cluster, holders map[string]membership.Holder) string {
	if h, ok := holders[c.Name]; ok {
		return h.String()
	}
	return "—"
}

func (s *Server) clustersPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !s.clients.canList(ctx, identityOf(r), "clusters", "") {
		s.errorPage(w, r, http.StatusForbidden, fmt.Errorf("you may not list Clusters"))
		return
	}
	clusters, err := s.store.clusters(ctx)
	if err != nil {
		s.errorPage(w, r, http.StatusInternalServerError, err)
		return
	}
	apps, _ := s.store.applications(ctx, s.opts.Namespace)
	apps = s.readable(r, apps)
	count := map[string][2]int{}
	for _, a := range apps {
		c := count[column(a, clusters)]
		c[0]++
		if appState(a) != stateOK {
			c[1]++
		}
		count[column(a, clusters)] = c
	}
	// Read as the dashboard, not as the user: which replica syncs a Cluster is no secret of
	// it. Without replicas there are no Leases; without the right to read them, no column.
	holders, err := membership.Holders(ctx, s.store.direct, s.opts.SystemNamespace, time.Now())
	if err != nil {
		s.log.V(1).Info("Could not read which replica syncs each Cluster", "error", err.Error())
	}
	var views []clusterView
	for i := range clusters {
		c := &clusters[i]
		v := clusterView{Cluster: c, ID: elementID("cl", c.Name), Ready: "Unknown", State: stateUnknown, Replica: ownerReplica(c, holders),
			Apps: count[c.Name][0], NotOK: count[c.Name][1]}
		if cond := meta.FindStatusCondition(c.Status.Conditions, navarchv1.ConditionReady); cond != nil {
			v.Ready = string(cond.Status)
			switch cond.Status {
			case metav1.ConditionTrue:
				v.State = stateOK
			case metav1.ConditionFalse:
				v.State = stateFailed
			}
		}
		v.Conditions = conditionViews(c.Status.Conditions, clusterConditionWords)
		for k, val := range c.Labels {
			v.Labels = append(v.Labels, k+"="+val)
		}
		slices.Sort(v.Labels)
		views = append(views, v)
	}
	slices.SortFunc(views, func(a, b clusterView) int {
		return cmp.Or(cmp.Compare(b.State.rank(), a.State.rank()), strings.Compare(a.Cluster.Name, b.Cluster.Name))
	})
	s.render(w, r, http.StatusOK, "clusters", page{Title: "Clusters", Nav: "clusters", Live: true, Watch: "Cluster", Data: views})
}

func (s *Server) allowedNamespace(r *http.Request, resource, ns string) bool {
	if s.opts.Namespace != "" && ns != s.opts.Namespace {
		return false
	}
	return s.clients.canList(r.Context(), identityOf(r), resource, ns)
}

func statusOf(err error) int {
	if apierrors.IsNotFound(err) {
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

// templateFuncs are the helpers the templates use.
var templateFuncs = template.FuncMap{
	"ago": func(t any) string {
		var tm time.Time
		switch v := t.(type) {
		case *metav1.Time:
			if v == nil {
				return "—"
			}
			tm = v.Time
		case metav1.Time:
			tm = v.Time
		case time.Time:
			tm = v
		}
		if tm.IsZero() {
			return "—"
		}
		return duration.HumanDuration(time.Since(tm)) + " ago"
	},
	"timestamp": func(t any) string {
		switch v := t.(type) {
		case *metav1.Time:
			if v == nil {
				return ""
			}
			return v.UTC().Format(time.RFC3339)
		case metav1.Time:
			return v.UTC().Format(time.RFC3339)
		}
		return ""
	},
	"short":   source.ShortRevision,
	"appPath": applicationPath,
	"setPath": applicationSetPath,
	"orDash": func(s any) string {
		str := fmt.Sprint(s)
		if str == "" {
			return "—"
		}
		return str
	},
	"cell":        cellHTML,
	"summaryHTML": summaryHTML,
	"columnHead":  columnHeadHTML,
	"stateLabel":  func(s state) string { return stateLabels[s] },
	"cellText":    cellText,
	"appState":    appState,
	"sources": func(app *navarchv1.Application) []navarchv1.ApplicationSource {
		return app.Spec.GetSources()
	},
	"autoSync": func(app *navarchv1.Application) string {
		sp := app.Spec.SyncPolicy
		if sp == nil || sp.Automated == nil {
			return "manual"
		}
		s := "automated"
		if sp.Automated.Prune {
			s += ", prune"
		}
		if sp.Automated.SelfHeal {
			s += ", self-heal"
		}
		return s
	},
	"kindOf": func(group, kind string) string {
		if group == "" {
			return kind
		}
		return kind + "." + group
	},
	"initiator": func(by navarchv1.OperationInitiator) string {
		switch {
		case by.Username != "":
			return by.Username
		case by.Automated:
			return "automated sync"
		}
		return "unknown"
	},
	"operationKind": func(op navarchv1.Operation) string {
		if op.Rollback != nil {
			return fmt.Sprintf("rollback to history entry %d", op.Rollback.ID)
		}
		return "sync"
	},
	"phaseState": func(p navarchv1.OperationPhase) state {
		switch p {
		case navarchv1.OperationSucceeded:
			return stateOK
		case navarchv1.OperationFailed, navarchv1.OperationError:
			return stateFailed
		}
		return stateProgressing
	},
	"taskState": func(t navarchv1.ResourceResult) state {
		switch {
		case t.Status == navarchv1.ResultSyncFailed || t.HookPhase == navarchv1.HookFailed || t.HookPhase == navarchv1.HookError:
			return stateFailed
		case t.HookPhase == navarchv1.HookRunning || t.HookPhase == navarchv1.HookPending:
			return stateProgressing
		case t.Status == "":
			return stateUnknown
		}
		return stateOK
	},
	"join": strings.Join,
}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range []string{"fleet", "application", "applicationset", "clusters", "confirm", "login", "error"} {
		t, err := template.New(name).Funcs(templateFuncs).ParseFS(templateFiles, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}
