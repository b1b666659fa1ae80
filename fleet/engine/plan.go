package engine

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// kindOrder is the order in which kinds of one wave are applied: what others depend on first.
// Kinds not listed, custom resources included, come last.
var kindOrder = indexOf([]string{
	"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList",
	"RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController",
	"ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
	"IngressClass", "Ingress", "APIService",
})

func indexOf(kinds []string) map[string]int {
	m := make(map[string]int, len(kinds))
	for i, k := range kinds {
		m[k] = i
	}
	return m
}

func kindRank(kind string) int {
	if i, ok := kindOrder[kind]; ok {
		return i
	}
	return len(kindOrder)
}

// waveOf reads the sync-wave annotation, or, for a Helm hook without one, helm.sh/hook-weight;
// a missing or malformed one is wave 0.
func waveOf(r *resource) int64 {
	obj := r.obj
	if obj == nil {
		obj = r.live
	}
	v := annotation(obj, navarchv1.AnnotationSyncWave, navarchv1.ArgoAnnotationSyncWave)
	if v == "" && isHelmHook(obj) {
		v = annotation(obj, helmHookWeight)
	}
	w, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0
	}
	return w
}

// applyOrder sorts resources to apply: by wave, kind order, namespace, name.
func applyOrder(a, b *resource) int {
	return cmp.Or(
		cmp.Compare(a.wave, b.wave),
		cmp.Compare(kindRank(a.ref.Kind), kindRank(b.ref.Kind)),
		cmp.Compare(a.ref.Kind, b.ref.Kind),
		cmp.Compare(a.ref.Group, b.ref.Group),
		cmp.Compare(a.ref.Namespace, b.ref.Namespace),
		cmp.Compare(a.ref.Name, b.ref.Name),
	)
}

// waves groups resources sorted by applyOrder into waves, lowest first.
func waves(rs []*resource) [][]*resource {
	slices.SortFunc(rs, applyOrder)
	var out [][]*resource
	for i, r := range rs {
		if i == 0 || r.wave != rs[i-1].wave {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], r)
	}
	return out
}

// pruneOrder is the reverse of applyOrder: dependants go before what they depend on.
func pruneOrder(a, b *resource) int { return applyOrder(b, a) }

// task is one step of a sync operation's plan: apply an object, run a hook instance, or
// prune an object.
type task struct {
	res   *resource
	phase navarchv1.SyncPhase
	wave  int64
	prune bool
}

func (t *task) isHook() bool { return t.res.hook != nil }

// phaseOrder is the order of the phases of a successful sync.
var phaseOrder = []navarchv1.SyncPhase{navarchv1.SyncPhasePreSync, navarchv1.SyncPhaseSync, navarchv1.SyncPhasePostSync}

// plan is an operation attempt's tasks: groups of (phase, wave) in order, and the SyncFail
// hooks that run if the attempt fails.
type plan struct {
	groups   [][]*task
	syncFail []*task
	all      []*task
}

// buildPlan orders the operation's tasks. Prune tasks run in the Sync phase in reverse wave
// order (the object of the highest wave first), or after every other Sync task with
// PruneLast; within a group prune tasks come first, then hooks and objects in kind order.
func buildPlan(app *navarchv1.Application, apply, prune, hooks []*resource, opID string, opts syncOptions) *plan {
	p := &plan{}
	var tasks []*task
	minWave, maxWave := int64(0), int64(0)
	for i, r := range apply {
		if i == 0 || r.wave < minWave {
			minWave = r.wave
		}
		if i == 0 || r.wave > maxWave {
			maxWave = r.wave
		}
		tasks = append(tasks, &task{res: r, phase: navarchv1.SyncPhaseSync, wave: r.wave})
	}
	for _, r := range prune {
		w := minWave + maxWave - r.wave
		if opts.on("PruneLast") || r.options.on("PruneLast") {
			w = maxWave + 1
		}
		tasks = append(tasks, &task{res: r, phase: navarchv1.SyncPhaseSync, wave: w, prune: true})
	}
	for _, h := range hooks {
		for _, phase := range h.hook.phases {
			t := &task{res: hookInstance(app, h, phase, opID), phase: phase, wave: h.wave}
			if phase == navarchv1.SyncPhaseSyncFail {
				p.syncFail = append(p.syncFail, t)
			} else {
				tasks = append(tasks, t)
			}
		}
	}
	slices.SortFunc(p.syncFail, func(a, b *task) int { return applyOrder(a.res, b.res) })
	slices.SortStableFunc(tasks, func(a, b *task) int {
		if c := slices.Index(phaseOrder, a.phase) - slices.Index(phaseOrder, b.phase); c != 0 {
			return c
		}
		if a.wave != b.wave {
			return cmp.Compare(a.wave, b.wave)
		}
		if a.prune != b.prune {
			if a.prune {
				return -1
			}
			return 1
		}
		if a.prune {
			return pruneOrder(a.res, b.res)
		}
		return applyOrder(a.res, b.res)
	})
	for i, t := range tasks {
		if i == 0 || t.phase != tasks[i-1].phase || t.wave != tasks[i-1].wave {
			p.groups = append(p.groups, nil)
		}
		p.groups[len(p.groups)-1] = append(p.groups[len(p.groups)-1], t)
	}
	p.all = append(slices.Clone(tasks), p.syncFail...)
	return p
}

// attemptID names an operation's first attempt, from the Application and the operation's start
// time, to the nanosecond as the controller that starts it knows it: different for every
// operation. The id is recorded with the start, before the attempt creates anything, so a
// restarted controller finds the hook instances of the attempt by it. (For an attempt whose
// id a controller of an earlier version left empty, the start time is the recorded one, to
// the second, and the retry count tells the attempts apart.)
func attemptID(app *navarchv1.Application, state *navarchv1.OperationState) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%s/%d/%d", app.UID, app.Name, state.StartedAt.UTC().Format(time.RFC3339Nano), state.RetryCount, len(app.Status.History)))
	return hex.EncodeToString(sum[:])[:5]
}

// retryID names the attempt after the one named id: retry n of the operation. It is recorded
// with the retry's schedule, before the attempt creates anything.
func retryID(id string, n int64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/retry/%d", id, n))
	return hex.EncodeToString(sum[:])[:5]
}
