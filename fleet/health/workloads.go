package health

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// reasonProgressDeadlineExceeded is the reason of a Deployment's Progressing=False condition
// once spec.progressDeadlineSeconds has passed without progress.
const reasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"

// msgRolloutNotObserved is the message of a workload whose controller has not yet seen its
// latest spec: its status describes an older generation and says nothing about this one.
const msgRolloutNotObserved = "waiting for the rollout to be observed"

// replicasOrOne returns the desired replicas of a workload, which the API server defaults to 1.
func replicasOrOne(replicas *int32) int32 {
	if replicas == nil {
		return 1
	}
	return *replicas
}

func deploymentHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var d appsv1.Deployment
	if err := convert(obj, &d); err != nil {
		return nil, err
	}
	if d.Spec.Paused {
		return suspended("Deployment is paused"), nil
	}
	if d.Status.ObservedGeneration < d.Generation {
		return progressing(msgRolloutNotObserved), nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == reasonProgressDeadlineExceeded {
			return degraded(explain(c.Message, "Deployment exceeded its progress deadline")), nil
		}
	}
	desired, st := replicasOrOne(d.Spec.Replicas), d.Status
	switch {
	case st.UpdatedReplicas < desired:
		return progressing(fmt.Sprintf("Waiting for rollout to finish: %d of %d replicas updated", st.UpdatedReplicas, desired)), nil
	case st.Replicas > st.UpdatedReplicas:
		return progressing(fmt.Sprintf("Waiting for rollout to finish: %d old replicas pending termination", st.Replicas-st.UpdatedReplicas)), nil
	case st.AvailableReplicas < st.UpdatedReplicas:
		return progressing(fmt.Sprintf("Waiting for rollout to finish: %d of %d updated replicas are available", st.AvailableReplicas, st.UpdatedReplicas)), nil
	}
	return healthy(), nil
}

func statefulSetHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var s appsv1.StatefulSet
	if err := convert(obj, &s); err != nil {
		return nil, err
	}
	if s.Status.ObservedGeneration < s.Generation {
		return progressing(msgRolloutNotObserved), nil
	}
	// With OnDelete, pods are only replaced when someone deletes them, so there is no rollout
	// to wait for.
	if s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return healthy(), nil
	}
	desired, st := replicasOrOne(s.Spec.Replicas), s.Status
	if st.ReadyReplicas < desired {
		return progressing(fmt.Sprintf("Waiting for %d of %d pods to be ready", desired-st.ReadyReplicas, desired)), nil
	}
	// A partitioned rollout updates only the pods with an ordinal at or above the partition;
	// the revisions never converge, so it is done once those pods are updated.
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 {
		want := max(desired-*ru.Partition, 0)
		if st.UpdatedReplicas < want {
			return progressing(fmt.Sprintf("Waiting for partitioned rollout to finish: %d of %d new pods updated", st.UpdatedReplicas, want)), nil
		}
		return healthy(), nil
	}
	if st.UpdateRevision != st.CurrentRevision {
		return progressing(fmt.Sprintf("Waiting for rolling update to finish: %d of %d pods at revision %s", st.UpdatedReplicas, desired, st.UpdateRevision)), nil
	}
	return healthy(), nil
}

func daemonSetHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var ds appsv1.DaemonSet
	if err := convert(obj, &ds); err != nil {
		return nil, err
	}
	if ds.Status.ObservedGeneration < ds.Generation {
		return progressing(msgRolloutNotObserved), nil
	}
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return healthy(), nil
	}
	st := ds.Status
	if st.UpdatedNumberScheduled < st.DesiredNumberScheduled {
		return progressing(fmt.Sprintf("Waiting for daemon set rollout to finish: %d of %d pods updated", st.UpdatedNumberScheduled, st.DesiredNumberScheduled)), nil
	}
	if st.NumberAvailable < st.DesiredNumberScheduled {
		return progressing(fmt.Sprintf("Waiting for daemon set rollout to finish: %d of %d updated pods are available", st.NumberAvailable, st.DesiredNumberScheduled)), nil
	}
	return healthy(), nil
}

func replicaSetHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var rs appsv1.ReplicaSet
	if err := convert(obj, &rs); err != nil {
		return nil, err
	}
	if rs.Status.ObservedGeneration < rs.Generation {
		return progressing(msgRolloutNotObserved), nil
	}
	for _, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return degraded(explain(c.Message, c.Reason, "ReplicaSet cannot create its pods")), nil
		}
	}
	if desired := replicasOrOne(rs.Spec.Replicas); rs.Status.AvailableReplicas < desired {
		return progressing(fmt.Sprintf("Waiting for rollout to finish: %d of %d replicas are available", rs.Status.AvailableReplicas, desired)), nil
	}
	return healthy(), nil
}
