package engine

import (
	"cmp"
	"slices"
	"strconv"

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

// waveOf reads the sync-wave annotation; a missing or malformed one is wave 0.
func waveOf(r *resource) int64 {
	v := annotation(r.obj, navarchv1.AnnotationSyncWave, navarchv1.ArgoAnnotationSyncWave)
	if r.obj == nil {
		v = annotation(r.live, navarchv1.AnnotationSyncWave, navarchv1.ArgoAnnotationSyncWave)
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
