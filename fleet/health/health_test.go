package health_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/health"
)

// object parses a YAML manifest the way a live object arrives from a cluster: numbers as int64.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatalf("YAMLToJSON: %v", err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		t.Fatalf("UnmarshalJSON: %v\n%s", err, manifest)
	}
	return obj
}

const (
	healthy     = navarchv1.HealthHealthy
	suspended   = navarchv1.HealthSuspended
	progressing = navarchv1.HealthProgressing
	missing     = navarchv1.HealthMissing
	degraded    = navarchv1.HealthDegraded
	unknown     = navarchv1.HealthUnknown
	noHealth    = navarchv1.HealthStatusCode("") // Assess returns nil
)

type assessCase struct {
	name     string
	manifest string
	want     navarchv1.HealthStatusCode
	message  string
}

func runAssessCases(t *testing.T, cases []assessCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := health.Assess(object(t, tc.manifest))
			if tc.want == noHealth {
				if got != nil {
					t.Fatalf("Assess() = %+v, want nil", *got)
				}
				return
			}
			if got == nil {
				t.Fatalf("Assess() = nil, want %s %q", tc.want, tc.message)
			}
			if got.Status != tc.want || got.Message != tc.message {
				t.Errorf("Assess() = %s %q, want %s %q", got.Status, got.Message, tc.want, tc.message)
			}
		})
	}
}

func TestAssessNil(t *testing.T) {
	got := health.Assess(nil)
	if got == nil || got.Status != missing {
		t.Fatalf("Assess(nil) = %+v, want Missing", got)
	}
}

func TestAssessDeletion(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name: "deployment being deleted",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1, deletionTimestamp: "2026-01-01T00:00:00Z"}
spec: {replicas: 1}
status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1}`,
			want:    progressing,
			message: "being deleted",
		},
		{
			name: "configmap being deleted",
			manifest: `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, deletionTimestamp: "2026-01-01T00:00:00Z"}`,
			want:    progressing,
			message: "being deleted",
		},
	})
}

func TestAssessDeployment(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name: "rolled out",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 3}`,
			want: healthy,
		},
		{
			name: "replicas default to one",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1}
status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1}`,
			want: healthy,
		},
		{
			name: "scaled to zero",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1}
spec: {replicas: 0}
status: {observedGeneration: 1}`,
			want: healthy,
		},
		{
			name: "paused",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 3}
spec: {replicas: 3, paused: true}
status: {observedGeneration: 2, replicas: 3, updatedReplicas: 1}`,
			want:    suspended,
			message: "Deployment is paused",
		},
		{
			name: "generation not observed",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 3}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 3}`,
			want:    progressing,
			message: "waiting for the rollout to be observed",
		},
		{
			name: "progress deadline exceeded",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 3}
status:
  observedGeneration: 2
  replicas: 4
  updatedReplicas: 1
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - type: Progressing
    status: "False"
    reason: ProgressDeadlineExceeded
    message: ReplicaSet "web-7d9f" has timed out progressing.`,
			want:    degraded,
			message: `ReplicaSet "web-7d9f" has timed out progressing.`,
		},
		{
			name: "replicas being updated",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 4, updatedReplicas: 1, availableReplicas: 3}`,
			want:    progressing,
			message: "Waiting for rollout to finish: 1 of 3 replicas updated",
		},
		{
			name: "old replicas pending termination",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 4, updatedReplicas: 3, availableReplicas: 3}`,
			want:    progressing,
			message: "Waiting for rollout to finish: 1 old replicas pending termination",
		},
		{
			name: "updated replicas not yet available",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 1}`,
			want:    progressing,
			message: "Waiting for rollout to finish: 1 of 3 updated replicas are available",
		},
		{
			name: "spec that does not convert",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: three}`,
			want:    unknown,
			message: `read Deployment "web": unrecognized type: int32`,
		},
	})
}

func TestAssessStatefulSet(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name: "rolled out",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 1}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 3, readyReplicas: 3, updatedReplicas: 3, currentRevision: db-1, updateRevision: db-1}`,
			want: healthy,
		},
		{
			name: "generation not observed",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 3, readyReplicas: 3}`,
			want:    progressing,
			message: "waiting for the rollout to be observed",
		},
		{
			name: "on delete is healthy once observed",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 3, updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 1, currentRevision: db-1, updateRevision: db-2}`,
			want: healthy,
		},
		{
			name: "pods not ready",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 1}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 3, readyReplicas: 1}`,
			want:    progressing,
			message: "Waiting for 2 of 3 pods to be ready",
		},
		{
			name: "partitioned rollout in progress",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 4, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}
status: {observedGeneration: 2, replicas: 4, readyReplicas: 4, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}`,
			want:    progressing,
			message: "Waiting for partitioned rollout to finish: 1 of 2 new pods updated",
		},
		{
			name: "partitioned rollout done",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 4, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}
status: {observedGeneration: 2, replicas: 4, readyReplicas: 4, updatedReplicas: 2, currentRevision: db-1, updateRevision: db-2}`,
			want: healthy,
		},
		{
			name: "revisions differ",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-1, updateRevision: db-2}`,
			want:    progressing,
			message: "Waiting for rolling update to finish: 1 of 3 pods at revision db-2",
		},
	})
}

func TestAssessDaemonSet(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name: "rolled out",
			manifest: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3}`,
			want: healthy,
		},
		{
			name: "generation not observed",
			manifest: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 2}
status: {observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3}`,
			want:    progressing,
			message: "waiting for the rollout to be observed",
		},
		{
			name: "on delete",
			manifest: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 2}
spec: {updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, desiredNumberScheduled: 3, updatedNumberScheduled: 0, numberAvailable: 3}`,
			want: healthy,
		},
		{
			name: "pods being updated",
			manifest: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 2}
status: {observedGeneration: 2, desiredNumberScheduled: 3, updatedNumberScheduled: 1, numberAvailable: 3}`,
			want:    progressing,
			message: "Waiting for daemon set rollout to finish: 1 of 3 pods updated",
		},
		{
			name: "updated pods not available",
			manifest: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 2}
status: {observedGeneration: 2, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2}`,
			want:    progressing,
			message: "Waiting for daemon set rollout to finish: 2 of 3 updated pods are available",
		},
	})
}

func TestAssessReplicaSet(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name: "available",
			manifest: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9f, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, availableReplicas: 2}`,
			want: healthy,
		},
		{
			name: "generation not observed",
			manifest: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9f, generation: 2}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, availableReplicas: 2}`,
			want:    progressing,
			message: "waiting for the rollout to be observed",
		},
		{
			name: "replica failure",
			manifest: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9f, generation: 1}
spec: {replicas: 2}
status:
  observedGeneration: 1
  conditions:
  - type: ReplicaFailure
    status: "True"
    reason: FailedCreate
    message: 'pods "web-7d9f-" is forbidden: exceeded quota'`,
			want:    degraded,
			message: `pods "web-7d9f-" is forbidden: exceeded quota`,
		},
		{
			name: "not all available",
			manifest: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9f, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, availableReplicas: 1}`,
			want:    progressing,
			message: "Waiting for rollout to finish: 1 of 2 replicas are available",
		},
	})
}

func TestAssessPod(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name: "succeeded",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: migrate}
spec: {restartPolicy: Never, containers: [{name: main, image: migrate}]}
status: {phase: Succeeded}`,
			want: healthy,
		},
		{
			name: "failed with a message",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: main, image: web}]}
status: {phase: Failed, reason: Evicted, message: "The node was low on resource: memory."}`,
			want:    degraded,
			message: "The node was low on resource: memory.",
		},
		{
			name: "failed container",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: migrate}
spec: {restartPolicy: Never, containers: [{name: main, image: migrate}]}
status:
  phase: Failed
  containerStatuses:
  - {name: main, ready: false, restartCount: 0, image: migrate, imageID: "", state: {terminated: {exitCode: 2, reason: Error}}}`,
			want:    degraded,
			message: `container "main" terminated: Error (exit code 2)`,
		},
		{
			name: "running and ready",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: main, image: web}, {name: proxy, image: envoy}]}
status:
  phase: Running
  containerStatuses:
  - {name: main, ready: true, restartCount: 0, image: web, imageID: "", state: {running: {}}}
  - {name: proxy, ready: true, restartCount: 0, image: envoy, imageID: "", state: {running: {}}}`,
			want: healthy,
		},
		{
			name: "running, one container not ready",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {restartPolicy: Always, containers: [{name: main, image: web}, {name: proxy, image: envoy}]}
status:
  phase: Running
  containerStatuses:
  - {name: main, ready: false, restartCount: 0, image: web, imageID: "", state: {running: {}}}
  - {name: proxy, ready: true, restartCount: 0, image: envoy, imageID: "", state: {running: {}}}`,
			want:    progressing,
			message: "Waiting for 1 of 2 containers to be ready",
		},
		{
			name: "crash looping",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: main, image: web}]}
status:
  phase: Running
  containerStatuses:
  - name: main
    ready: false
    restartCount: 5
    image: web
    imageID: ""
    state: {waiting: {reason: CrashLoopBackOff, message: back-off 5m0s restarting failed container}}`,
			want:    degraded,
			message: `container "main": CrashLoopBackOff: back-off 5m0s restarting failed container`,
		},
		{
			name: "image cannot be pulled while pending",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: main, image: web:nope}]}
status:
  phase: Pending
  containerStatuses:
  - {name: main, ready: false, restartCount: 0, image: "web:nope", imageID: "", state: {waiting: {reason: ImagePullBackOff}}}`,
			want:    degraded,
			message: `container "main": ImagePullBackOff`,
		},
		{
			name: "init container missing its config",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: main, image: web}]}
status:
  phase: Pending
  initContainerStatuses:
  - {name: init, ready: false, restartCount: 0, image: init, imageID: "", state: {waiting: {reason: CreateContainerConfigError, message: secret "db" not found}}}`,
			want:    degraded,
			message: `container "init": CreateContainerConfigError: secret "db" not found`,
		},
		{
			name: "running a job's pod",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: migrate}
spec: {restartPolicy: OnFailure, containers: [{name: main, image: migrate}]}
status:
  phase: Running
  containerStatuses:
  - {name: main, ready: true, restartCount: 0, image: migrate, imageID: "", state: {running: {}}}`,
			want:    progressing,
			message: "Pod is running",
		},
		{
			name: "pending, unschedulable",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: main, image: web}]}
status:
  phase: Pending
  conditions:
  - {type: PodScheduled, status: "False", reason: Unschedulable, message: "0/3 nodes are available: 3 Insufficient cpu."}`,
			want:    progressing,
			message: "Pod is pending: 0/3 nodes are available: 3 Insufficient cpu.",
		},
		{
			name: "pending",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: main, image: web}]}
status: {phase: Pending}`,
			want:    progressing,
			message: "Pod is pending",
		},
	})
}

func TestAssessBatch(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name: "job complete",
			manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
status:
  succeeded: 1
  conditions:
  - {type: SuccessCriteriaMet, status: "True"}
  - {type: Complete, status: "True"}`,
			want: healthy,
		},
		{
			name: "job failed",
			manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
status:
  failed: 7
  conditions:
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}`,
			want:    degraded,
			message: "Job has reached the specified backoff limit",
		},
		{
			name: "job suspended",
			manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec: {suspend: true}
status:
  conditions:
  - {type: Suspended, status: "True"}`,
			want:    suspended,
			message: "Job is suspended",
		},
		{
			name: "job running",
			manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec: {suspend: false}
status: {active: 1}`,
			want:    progressing,
			message: "Waiting for the job to complete",
		},
		{
			name: "cronjob",
			manifest: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: report}
spec: {schedule: "@daily"}`,
			want: healthy,
		},
		{
			name: "cronjob suspended",
			manifest: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: report}
spec: {schedule: "@daily", suspend: true}`,
			want:    suspended,
			message: "CronJob is suspended",
		},
	})
}

func TestAssessCore(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name:     "pvc bound",
			manifest: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, status: {phase: Bound}}`,
			want:     healthy,
		},
		{
			name:     "pvc lost",
			manifest: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, spec: {volumeName: pv-1}, status: {phase: Lost}}`,
			want:     degraded,
			message:  `PersistentVolumeClaim lost its volume "pv-1"`,
		},
		{
			name:     "pvc pending",
			manifest: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, status: {phase: Pending}}`,
			want:     progressing,
			message:  "Waiting for the claim to be bound",
		},
		{
			name:     "cluster ip service",
			manifest: `{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {type: ClusterIP}, status: {loadBalancer: {}}}`,
			want:     healthy,
		},
		{
			name:     "load balancer without address",
			manifest: `{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {type: LoadBalancer}, status: {loadBalancer: {}}}`,
			want:     progressing,
			message:  "Waiting for the load balancer to get an address",
		},
		{
			name:     "load balancer with address",
			manifest: `{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {type: LoadBalancer}, status: {loadBalancer: {ingress: [{ip: 203.0.113.7}]}}}`,
			want:     healthy,
		},
		{
			name:     "namespace active",
			manifest: `{apiVersion: v1, kind: Namespace, metadata: {name: team}, status: {phase: Active}}`,
			want:     healthy,
		},
		{
			name:     "namespace terminating",
			manifest: `{apiVersion: v1, kind: Namespace, metadata: {name: team}, status: {phase: Terminating}}`,
			want:     progressing,
			message:  "Namespace is terminating",
		},
		{
			name:     "ingress with address",
			manifest: `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: web}, status: {loadBalancer: {ingress: [{hostname: lb.example.com}]}}}`,
			want:     healthy,
		},
		{
			name:     "ingress without address",
			manifest: `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: web}, status: {loadBalancer: {}}}`,
			want:     progressing,
			message:  "Waiting for the ingress controller to publish an address",
		},
		{
			name:     "ingress without status",
			manifest: `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: web}}`,
			want:     progressing,
			message:  "Waiting for the ingress controller to publish an address",
		},
	})
}

func TestAssessAPIs(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name: "crd established",
			manifest: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
status:
  conditions:
  - {type: NamesAccepted, status: "True", reason: NoConflicts}
  - {type: Established, status: "True", reason: InitialNamesAccepted}`,
			want: healthy,
		},
		{
			name: "crd names conflict",
			manifest: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
status:
  conditions:
  - {type: NamesAccepted, status: "False", reason: KindConflict, message: '"Widget" is already in use'}
  - {type: Established, status: "False", reason: NotAccepted}`,
			want:    degraded,
			message: `"Widget" is already in use`,
		},
		{
			name: "crd installing",
			manifest: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
status:
  conditions:
  - {type: NamesAccepted, status: "True", reason: NoConflicts}
  - {type: Established, status: "False", reason: Installing}`,
			want:    progressing,
			message: "Waiting for the CustomResourceDefinition to be established",
		},
		{
			name: "apiservice available",
			manifest: `
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
status: {conditions: [{type: Available, status: "True", reason: Passed}]}`,
			want: healthy,
		},
		{
			name: "apiservice unavailable",
			manifest: `
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
status: {conditions: [{type: Available, status: "False", reason: MissingEndpoints, message: endpoints for service/metrics-server in "kube-system" have no addresses}]}`,
			want:    progressing,
			message: `endpoints for service/metrics-server in "kube-system" have no addresses`,
		},
		{
			name:     "apiservice without conditions",
			manifest: `{apiVersion: apiregistration.k8s.io/v1, kind: APIService, metadata: {name: v1beta1.metrics.k8s.io}}`,
			want:     progressing,
			message:  "Waiting for the APIService to become available",
		},
	})
}

func TestAssessHorizontalPodAutoscaler(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name: "v2 scaling",
			manifest: `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
status:
  conditions:
  - {type: AbleToScale, status: "True", reason: ReadyForNewScale}
  - {type: ScalingActive, status: "True", reason: ValidMetricFound}
  - {type: ScalingLimited, status: "True", reason: TooFewReplicas}`,
			want: healthy,
		},
		{
			name: "v2 cannot read metrics",
			manifest: `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
status:
  conditions:
  - {type: AbleToScale, status: "True", reason: SucceededGetScale}
  - {type: ScalingActive, status: "False", reason: FailedGetResourceMetric, message: "the HPA was unable to compute the replica count: no metrics returned"}`,
			want:    degraded,
			message: "the HPA was unable to compute the replica count: no metrics returned",
		},
		{
			name: "v2 scaling disabled is intended",
			manifest: `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
status:
  conditions:
  - {type: ScalingActive, status: "False", reason: ScalingDisabled}`,
			want: healthy,
		},
		{
			name: "v2 without conditions yet",
			manifest: `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
status: {currentReplicas: 0, desiredReplicas: 0}`,
			want:    progressing,
			message: "Waiting for the autoscaler to report its conditions",
		},
		{
			name: "v1 conditions in the annotation",
			manifest: `
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: web
  annotations:
    autoscaling.alpha.kubernetes.io/conditions: '[{"type":"AbleToScale","status":"False","reason":"FailedGetScale","message":"deployments/scale.apps \"web\" not found"}]'
status: {currentReplicas: 1, desiredReplicas: 1}`,
			want:    degraded,
			message: `deployments/scale.apps "web" not found`,
		},
		{
			name: "v1 healthy",
			manifest: `
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: web
  annotations:
    autoscaling.alpha.kubernetes.io/conditions: '[{"type":"AbleToScale","status":"True","reason":"ReadyForNewScale"}]'
status: {currentReplicas: 1, desiredReplicas: 1}`,
			want: healthy,
		},
	})
}

func TestAssessApplication(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name: "navarch application degraded",
			manifest: `
apiVersion: navarch.io/v1alpha1
kind: Application
metadata: {name: guestbook}
status: {health: {status: Degraded, message: Deployment "web" exceeded its progress deadline}}`,
			want:    degraded,
			message: `Deployment "web" exceeded its progress deadline`,
		},
		{
			name:     "navarch application not assessed yet",
			manifest: `{apiVersion: navarch.io/v1alpha1, kind: Application, metadata: {name: guestbook}}`,
			want:     progressing,
			message:  "waiting for the Application's first health assessment",
		},
		{
			name:     "argo cd application healthy",
			manifest: `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: guestbook}, status: {health: {status: Healthy}}}`,
			want:     healthy,
		},
		{
			name:     "argo cd application suspended",
			manifest: `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: guestbook}, status: {health: {status: Suspended}}}`,
			want:     suspended,
		},
		{
			name:     "argo cd application not assessed yet",
			manifest: `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: guestbook}, status: {sync: {status: OutOfSync}}}`,
			want:     progressing,
			message:  "waiting for the Application's first health assessment",
		},
		{
			name:     "unknown code",
			manifest: `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: guestbook}, status: {health: {status: Sideways}}}`,
			want:     unknown,
			message:  `Application reports unknown health "Sideways"`,
		},
	})
}

func TestAssessWithoutHealth(t *testing.T) {
	runAssessCases(t, []assessCase{
		{name: "configmap", manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {a: b}}`},
		{name: "secret", manifest: `{apiVersion: v1, kind: Secret, metadata: {name: creds}, type: Opaque}`},
		{name: "service account", manifest: `{apiVersion: v1, kind: ServiceAccount, metadata: {name: app}}`},
		{name: "role", manifest: `{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: read}, rules: []}`},
		{name: "cluster role", manifest: `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: read}}`},
		{name: "role binding", manifest: `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: read}, roleRef: {kind: Role, name: read}}`},
		{name: "cluster role binding", manifest: `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: read}}`},
		{name: "network policy", manifest: `{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: deny}, spec: {podSelector: {}}}`},
		{name: "limit range", manifest: `{apiVersion: v1, kind: LimitRange, metadata: {name: limits}}`},
		{name: "resource quota with status", manifest: `{apiVersion: v1, kind: ResourceQuota, metadata: {name: quota}, status: {hard: {pods: "10"}, used: {pods: "2"}}}`},
		{name: "custom resource without status", manifest: `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, generation: 1}, spec: {size: 3}}`},
		{name: "custom resource with empty status", manifest: `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, generation: 1}, spec: {size: 3}, status: {}}`},
	})
}

func TestAssessGeneric(t *testing.T) {
	runAssessCases(t, []assessCase{
		{
			name: "ready",
			manifest: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, generation: 2}
status:
  observedGeneration: 2
  conditions: [{type: Ready, status: "True", reason: Reconciled}]`,
			want: healthy,
		},
		{
			name: "not ready",
			manifest: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, generation: 2}
status:
  observedGeneration: 2
  conditions: [{type: Ready, status: "False", reason: Provisioning, message: waiting for the bucket}]`,
			want:    progressing,
			message: "waiting for the bucket",
		},
		{
			name: "stalled",
			manifest: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, generation: 2}
status:
  observedGeneration: 2
  conditions: [{type: Stalled, status: "True", reason: InvalidSpec, message: size must be positive}]`,
			want:    degraded,
			message: "size must be positive",
		},
		{
			name: "generation not observed",
			manifest: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, generation: 3}
status:
  observedGeneration: 2
  conditions: [{type: Ready, status: "True"}]`,
			want:    progressing,
			message: "Widget generation is 3, but latest observed generation is 2",
		},
		{
			name:     "status without conditions",
			manifest: `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, status: {phase: Running}}`,
			want:     healthy,
		},
		{
			name:     "malformed status",
			manifest: `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, generation: 1}, status: {observedGeneration: one}}`,
			want:     unknown,
			message:  "looking up status.observedGeneration from resource: .status.observedGeneration accessor error: one is of the type string, expected int64",
		},
		{
			name: "pod disruption budget",
			manifest: `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, generation: 1}
status: {observedGeneration: 1, currentHealthy: 2, desiredHealthy: 1}`,
			want: healthy,
		},
	})
}
