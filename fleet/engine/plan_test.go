package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// object returns an object of the given apiVersion and kind, with annotations when not nil.
func object(apiVersion, kind, namespace, name string, annotations map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	if annotations != nil {
		obj.SetAnnotations(annotations)
	}
	return obj
}

// desired returns obj as a desired resource, its wave read as prepare reads it.
func desired(obj *unstructured.Unstructured) *resource {
	r := &resource{ref: refOf(obj), gvk: obj.GroupVersionKind(), obj: obj}
	r.wave = waveOf(r)
	return r
}

// describe names r by wave, kind, namespace and name, for comparing orders.
func describe(r *resource) string {
	return fmt.Sprintf("%d %s %s/%s", r.wave, r.ref.Kind, r.ref.Namespace, r.ref.Name)
}

func describeAll(rs []*resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = describe(r)
	}
	return out
}

func TestKindRank(t *testing.T) {
	// Each kind must rank strictly before the next one.
	ordered := []string{
		"Namespace", "NetworkPolicy", "ServiceAccount", "Secret", "ConfigMap",
		"PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
		"Role", "RoleBinding", "Service", "DaemonSet", "Deployment", "StatefulSet", "Job",
		"CronJob", "Ingress", "APIService",
	}
	for i := 1; i < len(ordered); i++ {
		if a, b := kindRank(ordered[i-1]), kindRank(ordered[i]); a >= b {
			t.Errorf("kindRank(%s) = %d, kindRank(%s) = %d: want %s first", ordered[i-1], a, ordered[i], b, ordered[i-1])
		}
	}

	tests := []struct {
		kind string
		want int
	}{
		{kind: "Namespace", want: 0},
		{kind: "NetworkPolicy", want: 1},
		{kind: "APIService", want: len(kindOrder) - 1},
		{kind: "Widget", want: len(kindOrder)},
		{kind: "", want: len(kindOrder)},
		{kind: "namespace", want: len(kindOrder)}, // kinds are case-sensitive
	}
	for _, tc := range tests {
		if got := kindRank(tc.kind); got != tc.want {
			t.Errorf("kindRank(%q) = %d, want %d", tc.kind, got, tc.want)
		}
	}
}

func TestWaveOf(t *testing.T) {
	tests := []struct {
		name      string
		obj, live map[string]string // annotations of the desired and the live object
		noObj     bool              // there is no desired object (only in the inventory)
		noLive    bool              // there is no live object
		want      int64
	}{
		{name: "no annotations", noLive: true, want: 0},
		{name: "navarch wave", obj: map[string]string{navarchv1.AnnotationSyncWave: "3"}, noLive: true, want: 3},
		{name: "argo wave", obj: map[string]string{navarchv1.ArgoAnnotationSyncWave: "2"}, noLive: true, want: 2},
		{name: "negative wave", obj: map[string]string{navarchv1.AnnotationSyncWave: "-5"}, noLive: true, want: -5},
		{name: "explicit plus sign", obj: map[string]string{navarchv1.AnnotationSyncWave: "+4"}, noLive: true, want: 4},
		{name: "surrounding whitespace", obj: map[string]string{navarchv1.AnnotationSyncWave: " 7 \n"}, noLive: true, want: 7},
		{
			name:   "navarch annotation wins over argo",
			obj:    map[string]string{navarchv1.AnnotationSyncWave: "1", navarchv1.ArgoAnnotationSyncWave: "9"},
			noLive: true,
			want:   1,
		},
		{
			name:   "a malformed navarch annotation is not replaced by argo's",
			obj:    map[string]string{navarchv1.AnnotationSyncWave: "late", navarchv1.ArgoAnnotationSyncWave: "9"},
			noLive: true,
			want:   0,
		},
		{name: "malformed word", obj: map[string]string{navarchv1.AnnotationSyncWave: "early"}, noLive: true, want: 0},
		{name: "malformed fraction", obj: map[string]string{navarchv1.AnnotationSyncWave: "1.5"}, noLive: true, want: 0},
		{name: "empty value", obj: map[string]string{navarchv1.AnnotationSyncWave: ""}, noLive: true, want: 0},
		{name: "out of range", obj: map[string]string{navarchv1.AnnotationSyncWave: "99999999999999999999"}, noLive: true, want: 0},
		{name: "live only", noObj: true, live: map[string]string{navarchv1.AnnotationSyncWave: "-3"}, want: -3},
		{name: "live only, argo", noObj: true, live: map[string]string{navarchv1.ArgoAnnotationSyncWave: "6"}, want: 6},
		{name: "live only, malformed", noObj: true, live: map[string]string{navarchv1.AnnotationSyncWave: "x"}, want: 0},
		{name: "neither desired nor live", noObj: true, noLive: true, want: 0},
		{name: "helm hook weight", obj: map[string]string{"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "-2"}, noLive: true, want: -2},
		{
			name:   "a sync wave wins over a helm hook weight",
			obj:    map[string]string{"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "-2", navarchv1.ArgoAnnotationSyncWave: "4"},
			noLive: true,
			want:   4,
		},
		{
			name:   "an argo hook makes helm's weight meaningless",
			obj:    map[string]string{"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "-2", navarchv1.ArgoAnnotationHook: "PreSync"},
			noLive: true,
			want:   0,
		},
		{name: "a helm weight on an object that is no hook", obj: map[string]string{"helm.sh/hook-weight": "5"}, noLive: true, want: 0},
		{
			name: "desired wave wins over live",
			obj:  map[string]string{navarchv1.AnnotationSyncWave: "1"},
			live: map[string]string{navarchv1.AnnotationSyncWave: "2"},
			want: 1,
		},
		{
			name: "desired without a wave is wave 0 whatever the live object says",
			obj:  map[string]string{},
			live: map[string]string{navarchv1.AnnotationSyncWave: "2"},
			want: 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &resource{}
			if !tc.noObj {
				r.obj = object("v1", "ConfigMap", "default", "cm", tc.obj)
			}
			if !tc.noLive {
				r.live = object("v1", "ConfigMap", "default", "cm", tc.live)
			}
			if got := waveOf(r); got != tc.want {
				t.Errorf("waveOf = %d, want %d", got, tc.want)
			}
		})
	}
}

// shopResources is a realistic Application: a namespace and a CRD first (wave -1), the
// workload (wave 0), and a migration Job and a worker after it (wave 1).
func shopResources() []*resource {
	wave := func(w string) map[string]string { return map[string]string{navarchv1.AnnotationSyncWave: w} }
	argoWave := func(w string) map[string]string { return map[string]string{navarchv1.ArgoAnnotationSyncWave: w} }
	return []*resource{
		desired(object("batch/v1", "Job", "shop", "migrate", wave("1"))),
		desired(object("example.com/v1", "Widget", "shop", "main", nil)),
		desired(object("apps/v1", "Deployment", "shop", "web", nil)),
		desired(object("v1", "Service", "shop", "web", wave("0"))),
		desired(object("v1", "ConfigMap", "shop", "b", nil)),
		desired(object("apps/v1", "Deployment", "shop", "worker", argoWave("1"))),
		desired(object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", argoWave("-1"))),
		desired(object("v1", "ConfigMap", "shop", "a", wave("not-a-number"))),
		desired(object("example.com/v1", "Gadget", "shop", "main", nil)),
		desired(object("v1", "ConfigMap", "other", "a", nil)),
		desired(object("v1", "Namespace", "", "shop", wave("-1"))),
	}
}

// shopWaves is the expected grouping and order of shopResources.
var shopWaves = [][]string{
	{
		"-1 Namespace /shop",
		"-1 CustomResourceDefinition /widgets.example.com",
	},
	{
		"0 ConfigMap other/a", // namespaces sort before names
		"0 ConfigMap shop/a",  // a malformed wave is wave 0
		"0 ConfigMap shop/b",
		"0 Service shop/web",
		"0 Deployment shop/web",
		"0 Gadget shop/main", // custom resources last, by kind name
		"0 Widget shop/main",
	},
	{
		"1 Deployment shop/worker",
		"1 Job shop/migrate",
	},
}

func TestWaves(t *testing.T) {
	// The outcome must not depend on the order the resources come in.
	inputs := map[string]func([]*resource){
		"as rendered": func([]*resource) {},
		"reversed":    slices.Reverse[[]*resource],
		"rotated": func(rs []*resource) {
			first := rs[0]
			copy(rs, rs[1:])
			rs[len(rs)-1] = first
		},
	}
	for name, permute := range inputs {
		t.Run(name, func(t *testing.T) {
			rs := shopResources()
			permute(rs)
			got := waves(rs)
			var gotNames [][]string
			for _, w := range got {
				gotNames = append(gotNames, describeAll(w))
			}
			if !slices.EqualFunc(gotNames, shopWaves, slices.Equal[[]string]) {
				t.Errorf("waves:\n%s\nwant:\n%s", formatWaves(gotNames), formatWaves(shopWaves))
			}
			// waves sorts its argument in apply order, too.
			if got, want := describeAll(rs), slices.Concat(shopWaves...); !slices.Equal(got, want) {
				t.Errorf("after waves, resources are\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestWavesEdgeCases(t *testing.T) {
	if got := waves(nil); len(got) != 0 {
		t.Errorf("waves(nil) = %d waves, want none", len(got))
	}
	one := desired(object("v1", "ConfigMap", "default", "only", map[string]string{navarchv1.AnnotationSyncWave: "5"}))
	got := waves([]*resource{one})
	if len(got) != 1 || len(got[0]) != 1 || got[0][0] != one {
		t.Errorf("waves of one resource = %v, want one wave holding it", got)
	}
}

func TestApplyOrder(t *testing.T) {
	cm := func(ns, name string, w int64) *resource {
		r := desired(object("v1", "ConfigMap", ns, name, nil))
		r.wave = w
		return r
	}
	kind := func(apiVersion, kind string) *resource {
		return desired(object(apiVersion, kind, "default", "x", nil))
	}
	tests := []struct {
		name   string
		before *resource
		after  *resource
	}{
		{name: "lower wave first, whatever the kind", before: kind("batch/v1", "Job"), after: cm("default", "x", 1)},
		{name: "negative wave before 0", before: cm("z", "z", -1), after: cm("a", "a", 0)},
		{name: "namespace before everything in its wave", before: kind("v1", "Namespace"), after: kind("v1", "ServiceAccount")},
		{name: "config before workloads", before: kind("v1", "ConfigMap"), after: kind("apps/v1", "Deployment")},
		{name: "CRD before RBAC", before: kind("apiextensions.k8s.io/v1", "CustomResourceDefinition"), after: kind("rbac.authorization.k8s.io/v1", "ClusterRole")},
		{name: "known kinds before custom ones", before: kind("apiregistration.k8s.io/v1", "APIService"), after: kind("example.com/v1", "Aardvark")},
		{name: "custom kinds by name", before: kind("example.com/v1", "Aardvark"), after: kind("example.com/v1", "Zebra")},
		{name: "same kind by namespace", before: cm("a", "z", 0), after: cm("b", "a", 0)},
		{name: "cluster-scoped before namespaced of the same kind", before: cm("", "z", 0), after: cm("a", "a", 0)},
		{name: "same namespace by name", before: cm("a", "a", 0), after: cm("a", "b", 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := applyOrder(tc.before, tc.after); got >= 0 {
				t.Errorf("applyOrder(%s, %s) = %d, want < 0", describe(tc.before), describe(tc.after), got)
			}
			if got := applyOrder(tc.after, tc.before); got <= 0 {
				t.Errorf("applyOrder(%s, %s) = %d, want > 0", describe(tc.after), describe(tc.before), got)
			}
			if got := pruneOrder(tc.after, tc.before); got >= 0 {
				t.Errorf("pruneOrder(%s, %s) = %d, want < 0", describe(tc.after), describe(tc.before), got)
			}
			if got := applyOrder(tc.before, tc.before); got != 0 {
				t.Errorf("applyOrder(%s, itself) = %d, want 0", describe(tc.before), got)
			}
		})
	}
}

func TestPruneOrderIsReverseApplyOrder(t *testing.T) {
	rs := shopResources()
	slices.SortFunc(rs, pruneOrder)
	want := slices.Concat(shopWaves...)
	slices.Reverse(want)
	if got := describeAll(rs); !slices.Equal(got, want) {
		t.Errorf("prune order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := describe(rs[0]); got != "1 Job shop/migrate" {
		t.Errorf("first to prune = %s, want the last-wave Job", got)
	}
	if got := describe(rs[len(rs)-1]); got != "-1 Namespace /shop" {
		t.Errorf("last to prune = %s, want the Namespace", got)
	}
}

func formatWaves(ws [][]string) string {
	var b strings.Builder
	for i, w := range ws {
		fmt.Fprintf(&b, "wave %d:\n  %s\n", i, strings.Join(w, "\n  "))
	}
	return b.String()
}

// hookResource returns obj as a hook, its phases and policies read as prepare reads them.
func hookResource(obj *unstructured.Unstructured) *resource {
	r := desired(obj)
	r.hook = parseHook(obj)
	return r
}

// prunable returns a live object no longer in Git, as the comparison finds it.
func prunable(obj *unstructured.Unstructured, options syncOptions) *resource {
	r := &resource{ref: refOf(obj), gvk: obj.GroupVersionKind(), live: obj, prune: true, options: options}
	r.wave = waveOf(r)
	return r
}

// describeTask names a task by phase, wave and what it does.
func describeTask(t *task) string {
	what := "apply"
	switch {
	case t.prune:
		what = "prune"
	case t.isHook():
		what = "hook"
	}
	return fmt.Sprintf("%s %d %s %s %s", t.phase, t.wave, what, t.res.ref.Kind, t.res.ref.Name)
}

func TestBuildPlan(t *testing.T) {
	app := &navarchv1.Application{}
	app.Name, app.Namespace = "shop", "platform"
	wave := func(w string) map[string]string { return map[string]string{navarchv1.AnnotationSyncWave: w} }
	hook := func(phases, w string) map[string]string {
		return map[string]string{navarchv1.AnnotationHook: phases, navarchv1.AnnotationSyncWave: w}
	}
	apply := func() []*resource {
		return []*resource{
			desired(object("v1", "ConfigMap", "shop", "config", wave("-1"))),
			desired(object("apps/v1", "Deployment", "shop", "web", nil)),
			desired(object("v1", "Service", "shop", "web", wave("1"))),
		}
	}
	tests := []struct {
		name     string
		prune    []*resource
		hooks    []*resource
		opts     syncOptions
		groups   [][]string
		syncFail []string
	}{{
		name:   "objects in wave order",
		groups: [][]string{{"Sync -1 apply ConfigMap config"}, {"Sync 0 apply Deployment web"}, {"Sync 1 apply Service web"}},
	}, {
		name: "prunes in reverse wave order, each before the objects of its group",
		prune: []*resource{
			prunable(object("v1", "ConfigMap", "shop", "old-high", wave("1")), nil),
			prunable(object("v1", "Secret", "shop", "old-low", wave("-1")), nil),
			prunable(object("v1", "ConfigMap", "shop", "old-zero", nil), nil),
		},
		groups: [][]string{
			{"Sync -1 prune ConfigMap old-high", "Sync -1 apply ConfigMap config"},
			{"Sync 0 prune ConfigMap old-zero", "Sync 0 apply Deployment web"},
			{"Sync 1 prune Secret old-low", "Sync 1 apply Service web"},
		},
	}, {
		name:  "PruneLast, for the sync or one object, prunes after the highest wave",
		prune: []*resource{prunable(object("v1", "ConfigMap", "shop", "old", wave("1")), syncOptions{"PruneLast": "true"})},
		groups: [][]string{
			{"Sync -1 apply ConfigMap config"}, {"Sync 0 apply Deployment web"}, {"Sync 1 apply Service web"},
			{"Sync 2 prune ConfigMap old"},
		},
	}, {
		name: "hooks by phase, then wave; SyncFail hooks apart",
		hooks: []*resource{
			hookResource(object("batch/v1", "Job", "shop", "smoke", hook("PostSync", "0"))),
			hookResource(object("batch/v1", "Job", "shop", "migrate", hook("PreSync", "5"))),
			hookResource(object("batch/v1", "Job", "shop", "warm", hook("Sync", "0"))),
			hookResource(object("batch/v1", "Job", "shop", "notify", hook("SyncFail", "0"))),
			hookResource(object("v1", "ConfigMap", "shop", "both", hook("PreSync,PostSync", "0"))),
		},
		groups: [][]string{
			{"PreSync 0 hook ConfigMap both"},
			{"PreSync 5 hook Job migrate"},
			{"Sync -1 apply ConfigMap config"},
			{"Sync 0 apply Deployment web", "Sync 0 hook Job warm"},
			{"Sync 1 apply Service web"},
			{"PostSync 0 hook ConfigMap both", "PostSync 0 hook Job smoke"},
		},
		syncFail: []string{"SyncFail 0 hook Job notify"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := buildPlan(app, apply(), tc.prune, tc.hooks, "4f1a2", tc.opts)
			var groups [][]string
			for _, g := range p.groups {
				var names []string
				for _, task := range g {
					names = append(names, describeTask(task))
				}
				groups = append(groups, names)
			}
			if got, want := formatWaves(groups), formatWaves(tc.groups); got != want {
				t.Errorf("groups:\n%s\nwant:\n%s", got, want)
			}
			var syncFail []string
			for _, task := range p.syncFail {
				syncFail = append(syncFail, describeTask(task))
			}
			if !slices.Equal(syncFail, tc.syncFail) {
				t.Errorf("SyncFail hooks %v, want %v", syncFail, tc.syncFail)
			}
			if n := len(p.all); n != len(apply())+len(tc.prune)+countPhases(tc.hooks) {
				t.Errorf("%d tasks in all, want every task once", n)
			}
		})
	}
}

func countPhases(hooks []*resource) int {
	n := 0
	for _, h := range hooks {
		n += len(h.hook.phases)
	}
	return n
}

// A hook with a fixed name keeps it; a generateName hook is named after the attempt, and per
// phase when it runs in several.
func TestHookInstanceNames(t *testing.T) {
	app := &navarchv1.Application{}
	app.Name, app.Namespace = "shop", "platform"
	generated := object("batch/v1", "Job", "shop", "", map[string]string{navarchv1.AnnotationHook: "PreSync,PostSync"})
	generated.SetGenerateName("migrate-")
	p := buildPlan(app, nil, nil, []*resource{
		hookResource(generated),
		hookResource(object("batch/v1", "Job", "shop", "fixed", map[string]string{navarchv1.AnnotationHook: "PreSync"})),
	}, "4f1a2", nil)
	var got []string
	for _, task := range p.all {
		got = append(got, fmt.Sprintf("%s %s %s", task.phase, task.res.ref.Name, task.res.obj.GetAnnotations()[navarchv1.AnnotationOperation]))
	}
	want := []string{
		"PreSync fixed 4f1a2.presync",
		"PreSync migrate-4f1a2-presync 4f1a2.presync",
		"PostSync migrate-4f1a2-postsync 4f1a2.postsync",
	}
	if !slices.Equal(got, want) {
		t.Errorf("hook instances %v, want %v", got, want)
	}
}
