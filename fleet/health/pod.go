package health

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// stuckReasons are the reasons a container waits for something that will not fix itself:
// a crashing process, an image that cannot be pulled, a missing ConfigMap or Secret.
var stuckReasons = map[string]bool{
	"CrashLoopBackOff":           true,
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
}

func podHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var pod corev1.Pod
	if err := convert(obj, &pod); err != nil {
		return nil, err
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		return healthy(), nil
	case corev1.PodFailed:
		return degraded(podFailure(&pod)), nil
	case corev1.PodPending, corev1.PodRunning:
		// Images are pulled while the pod is still Pending, so a stuck container is looked for
		// in both phases.
		if message, stuck := stuckContainer(&pod); stuck {
			return degraded(message), nil
		}
		if pod.Status.Phase == corev1.PodPending {
			return progressing(pendingReason(&pod)), nil
		}
		// A pod that is meant to finish (a Job's) is making progress while it runs; a pod that
		// is meant to run forever is healthy once it serves.
		if policy := pod.Spec.RestartPolicy; policy != "" && policy != corev1.RestartPolicyAlways {
			return progressing("Pod is running"), nil
		}
		if ready, total := readyContainers(&pod); ready < total {
			return progressing(fmt.Sprintf("Waiting for %d of %d containers to be ready", total-ready, total)), nil
		}
		return healthy(), nil
	case corev1.PodUnknown:
		return &navarchv1.HealthStatus{
			Status:  navarchv1.HealthUnknown,
			Message: explain(pod.Status.Message, pod.Status.Reason, "the pod's node is not reporting"),
		}, nil
	default:
		return progressing("Waiting for the pod to be scheduled"), nil
	}
}

// podFailure explains why a pod failed: the pod's own message or reason, else the first
// container that terminated with an error.
func podFailure(pod *corev1.Pod) string {
	if m := explain(pod.Status.Message, pod.Status.Reason); m != "" {
		return m
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				return fmt.Sprintf("container %q terminated: %s (exit code %d)", cs.Name, explain(t.Message, t.Reason, "Error"), t.ExitCode)
			}
		}
	}
	return "Pod failed"
}

// stuckContainer finds an init or app container waiting for a reason in stuckReasons.
func stuckContainer(pod *corev1.Pod) (string, bool) {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			w := cs.State.Waiting
			if w == nil || !stuckReasons[w.Reason] {
				continue
			}
			if w.Message == "" {
				return fmt.Sprintf("container %q: %s", cs.Name, w.Reason), true
			}
			return fmt.Sprintf("container %q: %s: %s", cs.Name, w.Reason, w.Message), true
		}
	}
	return "", false
}

// pendingReason explains a pending pod, preferring the scheduler's reason when it cannot place it.
func pendingReason(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			return "Pod is pending: " + c.Message
		}
	}
	return explain(pod.Status.Message, "Pod is pending")
}

// readyContainers counts the pod's ready app containers against those its spec declares.
func readyContainers(pod *corev1.Pod) (ready, total int) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Ready {
			ready++
		}
	}
	return ready, max(len(pod.Spec.Containers), len(pod.Status.ContainerStatuses))
}
