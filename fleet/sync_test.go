package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/fixture"
	"github.com/navarch-io/navarch/internal/testenv"
)

const guestbookBase = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook
spec:
  replicas: 2
  selector: {matchLabels: {app: guestbook}}
  template:
    metadata: {labels: {app: guestbook}}
    spec:
      containers:
      - name: web
        image: registry.example.com/guestbook:v1.0.0
        ports: [{containerPort: 8080}]
`

const guestbookService = `
apiVersion: v1
kind: Service
metadata:
  name: guestbook
spec:
  selector: {app: guestbook}
  ports: [{port: 80, targetPort: 8080}]
`

// Seed 2: an Application with a kustomize overlay, CreateNamespace and automated prune reaches
// Synced/Healthy; an out-of-band edit of the image tag shows OutOfSync naming that field and
// selfHeal reverts it; replicas owned by an autoscaler are ignored; a file deleted from Git is
// pruned.
func TestKustomizeOverlayIsSyncedSelfHealedAndPruned(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-guestbook"
	url := repo(t, map[string]string{
		"apps/guestbook/base/kustomization.yaml": "resources: [deployment.yaml, service.yaml]\n",
		"apps/guestbook/base/deployment.yaml":    guestbookBase,
		"apps/guestbook/base/service.yaml":       guestbookService,
		"apps/guestbook/overlays/prod/kustomization.yaml": `
resources: [../../base]
images:
- name: registry.example.com/guestbook
  newTag: v1.3.0
`,
	})
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: guestbook}
spec:
  source: {repoURL: %s, targetRevision: main, path: apps/guestbook/overlays/prod}
  destination: {name: east, namespace: %s}
  syncPolicy:
    automated: {prune: true}
    syncOptions: [CreateNamespace=true]
  ignoreDifferences:
  - {group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}
`, url, target))
	east := workloads["east"].Client

	got := waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	if n := len(got.Status.Resources); n != 2 {
		t.Fatalf("status.resources has %d entries, want 2 (Deployment, Service): %s", n, describe(got))
	}
	if h := got.Status.History; len(h) != 1 || h[0].Revision != got.Status.Sync.Revision {
		t.Errorf("history = %+v, want one entry at %s", h, got.Status.Sync.Revision)
	}
	dep := &appsv1.Deployment{}
	if err := east.Get(ctx, client.ObjectKey{Namespace: target, Name: "guestbook"}, dep); err != nil {
		t.Fatalf("the Deployment is not in cluster east: %v", err)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "registry.example.com/guestbook:v1.3.0" {
		t.Errorf("image %s, want the overlay's v1.3.0", img)
	}
	if id := dep.Annotations[navarchv1.AnnotationTrackingID]; id != ns+"_guestbook:apps/Deployment:"+target+"/guestbook" {
		t.Errorf("tracking id %q", id)
	}

	// Out-of-band edit (seed 1's "live v1.2.3 vs desired v1.3.0"): OutOfSync, naming the field.
	testenv.Update(t, east, dep, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/guestbook:v1.2.3"
	})
	got = waitForApp(t, app, "OutOfSync after a hand edit", func(a *navarchv1.Application) bool {
		return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync
	})
	var depStatus *navarchv1.ResourceStatus
	for i := range got.Status.Resources {
		if got.Status.Resources[i].Kind == "Deployment" {
			depStatus = &got.Status.Resources[i]
		}
	}
	if depStatus == nil || depStatus.Status != navarchv1.SyncStatusOutOfSync ||
		!strings.Contains(depStatus.Message, "/spec/template/spec/containers/0/image") {
		t.Fatalf("the Deployment's status should name the image field: %+v", depStatus)
	}
	// Without selfHeal the drift stays, even when the controller compares again.
	requestRefresh(t, app)
	testenv.Consistently(t, 5*time.Second, "without selfHeal the hand edit stays", func() string {
		if err := east.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil || !strings.HasSuffix(dep.Spec.Template.Spec.Containers[0].Image, "v1.2.3") {
			return fmt.Sprintf("the hand edit was reverted: %v %v", err, dep.Spec.Template.Spec.Containers)
		}
		return ""
	})

	// selfHeal reverts it.
	testenv.Update(t, mgmt, app, func(a *navarchv1.Application) { a.Spec.SyncPolicy.Automated.SelfHeal = true })
	testenv.Eventually(t, "selfHeal reverts the image", func() string {
		if err := east.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return err.Error()
		}
		if img := dep.Spec.Template.Spec.Containers[0].Image; img != "registry.example.com/guestbook:v1.3.0" {
			return "image is " + img
		}
		return ""
	})
	waitForApp(t, app, "Synced and Healthy after selfHeal", syncedAndHealthy)

	// An autoscaler owns the replicas: scaling through the scale subresource is ignored.
	scale := &unstructured.Unstructured{}
	scale.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Scale"))
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":3}}`))
	if err := east.SubResource("scale").Patch(ctx, dep, patch, client.FieldOwner("horizontal-pod-autoscaler")); err != nil {
		t.Fatalf("scale the Deployment: %v", err)
	}
	testenv.Eventually(t, "Synced and Healthy with 3 replicas", func() string {
		a := getApp(t, app)
		dep = &appsv1.Deployment{}
		if err := east.Get(ctx, client.ObjectKey{Namespace: target, Name: "guestbook"}, dep); err != nil {
			return err.Error()
		}
		if syncedAndHealthy(a) && dep.Status.AvailableReplicas == 3 {
			return ""
		}
		return fmt.Sprintf("replicas %d, available %d; %s", *dep.Spec.Replicas, dep.Status.AvailableReplicas, describe(a))
	})
	if *dep.Spec.Replicas != 3 {
		t.Errorf("replicas %d, want the autoscaler's 3 kept", *dep.Spec.Replicas)
	}

	// A file deleted from Git: its object is pruned.
	push(t, "drop the service", map[string]string{
		"apps/guestbook/base/service.yaml":       "",
		"apps/guestbook/base/kustomization.yaml": "resources: [deployment.yaml]\n",
	})
	refresh(t, app)
	testenv.Eventually(t, "the Service is pruned", func() string {
		err := east.Get(ctx, client.ObjectKey{Namespace: target, Name: "guestbook"}, &corev1.Service{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("Service still there (%v); %s", err, describe(getApp(t, app)))
	})
	got = waitForApp(t, app, "Synced with one resource", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && len(a.Status.Resources) == 1
	})
	if h := got.Status.History; len(h) < 2 {
		t.Errorf("history has %d entries after the second commit, want ≥ 2", len(h))
	}
}

const serviceMonitor = `
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  endpoints: [{port: metrics}]
`

const serviceMonitorCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {plural: servicemonitors, singular: servicemonitor, kind: ServiceMonitor, listKind: ServiceMonitorList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

const webConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data: {greeting: hello}
`

// Seed 1: a ServiceMonitor whose CRD is not installed fails the sync with a message naming the
// kind, and nothing is half-applied; with the CRD in the same source the CRD goes first and the
// sync succeeds.
func TestCustomResourceWaitsForItsCRD(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-web"
	url := repo(t, map[string]string{
		"web/configmap.yaml":      webConfigMap,
		"web/servicemonitor.yaml": serviceMonitor,
	})
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: web}
spec:
  source: {repoURL: %s, targetRevision: main, path: web}
  destination: {name: west, namespace: %s}
  syncPolicy:
    syncOptions: [CreateNamespace=true]
`, url, target))
	west := workloads["west"].Client

	waitForApp(t, app, "OutOfSync", func(a *navarchv1.Application) bool { return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync })
	requestSync(t, app)
	got := waitForApp(t, app, "sync Failed", func(a *navarchv1.Application) bool {
		return a.Status.OperationState != nil && a.Status.OperationState.Phase == navarchv1.OperationFailed
	})
	msg := got.Status.OperationState.Message
	if !strings.Contains(msg, "ServiceMonitor") || !strings.Contains(msg, "monitoring.coreos.com/v1") || !strings.Contains(msg, "nothing was applied") {
		t.Errorf("operation message %q should name the missing kind and say nothing was applied", msg)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, navarchv1.ApplicationSyncError); c == nil || !strings.Contains(c.Message, "ServiceMonitor") {
		t.Errorf("SyncError condition %+v should name ServiceMonitor", c)
	}
	if got.Operation != nil {
		t.Errorf("the operation field was not cleared: %+v", got.Operation)
	}
	err := west.Get(ctx, client.ObjectKey{Namespace: target, Name: "web"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap was applied although the sync failed: %v", err)
	}

	// The CRD in the same source: it is applied first, established, then the ServiceMonitor.
	push(t, "add the CRD", map[string]string{"web/crd.yaml": serviceMonitorCRD})
	refresh(t, app)
	waitForApp(t, app, "sees the new commit", func(a *navarchv1.Application) bool {
		return len(a.Status.Resources) == 3
	})
	requestSync(t, app)
	got = waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	if p := got.Status.OperationState.Phase; p != navarchv1.OperationSucceeded {
		t.Fatalf("operation %s: %s", p, got.Status.OperationState.Message)
	}
	order := []string{}
	for _, r := range got.Status.OperationState.SyncResult.Resources {
		order = append(order, r.Kind)
	}
	if strings.Join(order, ",") != "ConfigMap,CustomResourceDefinition,ServiceMonitor" {
		t.Errorf("apply order %v, want ConfigMap, CustomResourceDefinition, ServiceMonitor", order)
	}
	sm := &unstructured.Unstructured{}
	sm.SetAPIVersion("monitoring.coreos.com/v1")
	sm.SetKind("ServiceMonitor")
	if err := west.Get(ctx, client.ObjectKey{Namespace: target, Name: "web"}, sm); err != nil {
		t.Errorf("the ServiceMonitor is not in cluster west: %v", err)
	}
}

// Bad manifests: invalid YAML and a document without kind are reported with the file's path,
// and nothing is applied.
func TestBadManifestsNameTheFile(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{
		"bad/good.yaml":   webConfigMap,
		"bad/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n data: oops\n",
	})
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: bad}
spec:
  source: {repoURL: %s, targetRevision: main, path: bad}
  destination: {name: east, namespace: %s}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, url, ns+"-bad"))
	got := waitForApp(t, app, "ComparisonError", func(a *navarchv1.Application) bool {
		return meta.IsStatusConditionTrue(a.Status.Conditions, navarchv1.ApplicationComparisonError)
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, navarchv1.ApplicationComparisonError); !strings.Contains(c.Message, "bad/broken.yaml") {
		t.Errorf("ComparisonError %q should name bad/broken.yaml", c.Message)
	}
	if got.Status.Sync.Status != navarchv1.SyncStatusUnknown || got.Status.OperationState != nil {
		t.Errorf("sync %s, operation %+v: want Unknown and no operation", got.Status.Sync.Status, got.Status.OperationState)
	}

	push(t, "missing kind", map[string]string{"bad/broken.yaml": "apiVersion: v1\nmetadata: {name: x}\n"})
	refresh(t, app)
	testenv.Eventually(t, "the error names the file and the missing kind", func() string {
		c := meta.FindStatusCondition(getApp(t, app).Status.Conditions, navarchv1.ApplicationComparisonError)
		if c != nil && strings.Contains(c.Message, "bad/broken.yaml") && strings.Contains(c.Message, "kind") && !strings.Contains(c.Message, "mapping values") {
			return ""
		}
		return fmt.Sprintf("condition %+v", c)
	})
	err := workloads["east"].Client.Get(context.Background(), client.ObjectKey{Namespace: ns + "-bad", Name: "web"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the good ConfigMap was applied although its source is broken: %v", err)
	}
}

// An object already tracked by another Application: SharedResourceWarning, and with
// FailOnSharedResource=true the sync fails without touching it.
func TestSharedResourcesAreReported(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"shared/cm.yaml": webConfigMap})
	spec := func(name, options string) string {
		return fmt.Sprintf(`
metadata: {name: %s}
spec:
  source: {repoURL: %s, targetRevision: main, path: shared}
  destination: {name: east, namespace: %s}
  syncPolicy: {syncOptions: [CreateNamespace=true%s]}
`, name, url, ns, options)
	}
	first := createApp(t, ns, spec("first", ""))
	requestSync(t, first)
	waitForApp(t, first, "Synced", syncedAndHealthy)

	second := createApp(t, ns, spec("second", ", FailOnSharedResource=true"))
	got := waitForApp(t, second, "SharedResourceWarning", func(a *navarchv1.Application) bool {
		return meta.IsStatusConditionTrue(a.Status.Conditions, navarchv1.ApplicationSharedResourceWarning)
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, navarchv1.ApplicationSharedResourceWarning); !strings.Contains(c.Message, ns+"/first") {
		t.Errorf("SharedResourceWarning %q should name Application %s/first", c.Message, ns)
	}
	requestSync(t, second)
	got = waitForApp(t, second, "sync Failed", func(a *navarchv1.Application) bool {
		return a.Status.OperationState != nil && a.Status.OperationState.Phase == navarchv1.OperationFailed
	})
	if msg := got.Status.OperationState.Message; !strings.Contains(msg, "FailOnSharedResource") || !strings.Contains(msg, "first") {
		t.Errorf("operation message %q should name the other Application and the option", msg)
	}
	cm := &corev1.ConfigMap{}
	if err := workloads["east"].Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, cm); err != nil {
		t.Fatal(err)
	}
	if id := cm.Annotations[navarchv1.AnnotationTrackingID]; !strings.HasPrefix(id, ns+"_first:") {
		t.Errorf("the ConfigMap's tracking id is %q, want it still tracked by first", id)
	}
}

// dryRunCount reads the controller's dry-run counter for a cluster (the controller runs in this
// process, so its metrics registry is this process's).
func dryRunCount(t *testing.T, cluster string) float64 {
	t.Helper()
	for _, m := range fixture.Metrics(t, "navarch_dry_runs_total", map[string]string{"cluster": cluster}) {
		return m.GetCounter().GetValue()
	}
	return 0
}

// An unchanged Application costs no dry runs however often it is compared, and a render that
// would delete everything is refused unless allowEmpty says otherwise.
func TestUnchangedApplicationsCostNoDryRunsAndEmptyRendersAreRefused(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"cm/a.yaml": configMap("a", "1"), "cm/b.yaml": configMap("b", "2")})
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: steady}
spec:
  source: {repoURL: %s, targetRevision: main, path: cm}
  destination: {name: west, namespace: %s}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, url, ns))
	waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	before := dryRunCount(t, "west")
	for range 5 {
		refresh(t, app) // the controller compares the Application again
	}
	if after := dryRunCount(t, "west"); after != before {
		t.Errorf("5 comparisons of an unchanged Application made %v dry runs, want 0", after-before)
	}

	push(t, "remove everything", map[string]string{"cm/a.yaml": "", "cm/b.yaml": "", "cm/README.md": "nothing here\n"})
	refresh(t, app)
	got := waitForApp(t, app, "refusing the empty render", func(a *navarchv1.Application) bool {
		c := meta.FindStatusCondition(a.Status.Conditions, navarchv1.ApplicationSyncError)
		return c != nil && c.Reason == navarchv1.ReasonEmptyRender
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, navarchv1.ApplicationSyncError); !strings.Contains(c.Message, "allowEmpty") {
		t.Errorf("the EmptyRender condition should say how to allow it: %q", c.Message)
	}
	west := workloads["west"].Client
	for _, name := range []string{"a", "b"} {
		if err := west.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("ConfigMap %s was pruned by an empty render: %v", name, err)
		}
	}
	testenv.Update(t, mgmt, app, func(a *navarchv1.Application) { a.Spec.SyncPolicy.Automated.AllowEmpty = true })
	testenv.Eventually(t, "allowEmpty prunes everything", func() string {
		for _, name := range []string{"a", "b"} {
			if err := west.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				return fmt.Sprintf("ConfigMap %s still there (%v)", name, err)
			}
		}
		return ""
	})
}

// In a namespace the sync creates, the object applied first is not dry-run: nothing of the
// attempt precedes its apply, so the apply tells whether the server accepts it. The others
// are, so an invalid one still applies nothing; an invalid first one fails the attempt as its
// dry run would have.
func TestTheFirstObjectInANewNamespaceIsValidatedByItsApply(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	east := workloads["east"].Client
	url := repo(t, map[string]string{
		"good/a.yaml": configMap("a", "1"), "good/b.yaml": configMap("b", "2"), "good/c.yaml": configMap("c", "3"),
		// ConfigMap keys may not hold a space: the server refuses the object.
		"first-bad/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {\"not a key\": x}\n",
		"first-bad/b.yaml": configMap("b", "2"),
	})

	good := manualApp(t, ns, url, "good", "east", ns+"-good", "")
	waitForApp(t, good, "OutOfSync", func(a *navarchv1.Application) bool { return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync })
	before := dryRunCount(t, "east")
	requestSync(t, good)
	got := waitForApp(t, good, "sync finished", operationDone)
	if p := got.Status.OperationState.Phase; p != navarchv1.OperationSucceeded {
		t.Fatalf("operation %s: %s", p, got.Status.OperationState.Message)
	}
	if n := dryRunCount(t, "east") - before; n != 2 {
		t.Errorf("the first sync of 3 objects into a new namespace made %v dry runs, want 2 (not the first object's)", n)
	}

	bad := manualApp(t, ns, url, "first-bad", "east", ns+"-bad", "")
	waitForApp(t, bad, "OutOfSync", func(a *navarchv1.Application) bool { return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync })
	requestSync(t, bad)
	got = waitForApp(t, bad, "sync finished", operationDone)
	st := got.Status.OperationState
	if st.Phase != navarchv1.OperationFailed || !strings.HasPrefix(st.Message, "nothing was applied: ConfigMap a: ") || !strings.Contains(st.Message, "not a key") {
		t.Errorf("operation %s: %q; want Failed with \"nothing was applied: ConfigMap a: …\" naming the key", st.Phase, st.Message)
	}
	if err := east.Get(ctx, client.ObjectKey{Namespace: ns + "-bad", Name: "b"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap b, after the first object was refused: %v; want it not applied", err)
	}
}
