// Package health assesses the health of live Kubernetes objects, the way the fleet reconciler
// reports it for each resource of an Application and, aggregated, for the Application itself.
//
// Assess takes one object as read from a cluster and returns a navarchv1.HealthStatus, or nil
// when the object's kind has no notion of health (ConfigMaps, Secrets, RBAC objects, and any
// object without a status). Callers count nil as healthy but should not display it as such.
//
// Well-known kinds have their own rules, close to those of Argo CD and `kubectl rollout status`:
// workload controllers (Deployment, StatefulSet, DaemonSet, ReplicaSet) are Progressing until
// their rollout is observed, updated and available; Pods, Jobs, CronJobs,
// PersistentVolumeClaims, Services, Ingresses, CustomResourceDefinitions, APIServices,
// HorizontalPodAutoscalers and Namespaces are judged from their status; Navarch and Argo CD
// Applications report the health they computed themselves. Every other kind with a status is
// judged by kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status), which understands the
// Ready, Reconciling and Stalled conditions most controllers set. An object that is being
// deleted is always Progressing.
//
// Worse and Worst order health codes from best to worst: Healthy, Suspended, Progressing,
// Missing, Degraded, Unknown. An Application's health is the Worst of its resources' health.
//
// The package is pure: no client, no logging, no package state that changes.
package health
