package health

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func jobHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var job batchv1.Job
	if err := convert(obj, &job); err != nil {
		return nil, err
	}
	complete := false
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobFailed:
			return degraded(explain(c.Message, c.Reason, "Job failed")), nil
		case batchv1.JobComplete:
			complete = true
		}
	}
	if complete {
		return healthy(), nil
	}
	if job.Spec.Suspend != nil && *job.Spec.Suspend {
		return suspended("Job is suspended"), nil
	}
	return progressing("Waiting for the job to complete"), nil
}

func cronJobHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var cj batchv1.CronJob
	if err := convert(obj, &cj); err != nil {
		return nil, err
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return suspended("CronJob is suspended"), nil
	}
	return healthy(), nil
}
