package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/internal/testenv"
)

// secretReads counts the reads of Secrets that it passes on to the API server: whole Secrets,
// and their metadata alone.
type secretReads struct {
	client.Reader
	whole, metadata atomic.Int32
}

func (s *secretReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	switch obj.(type) {
	case *corev1.Secret:
		s.whole.Add(1)
	case *metav1.PartialObjectMetadata:
		s.metadata.Add(1)
	}
	return s.Reader.Get(ctx, key, obj, opts...)
}

// A probe of a Cluster whose kubeconfig Secret has not changed since its connection reads the
// Secret's metadata only (every Cluster is probed every 30 seconds); a Secret that changed is
// read whole at that probe, whether it breaks the connection or mends it.
func TestAProbeReadsAnUnchangedKubeconfigSecretsMetadataOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	name := testenv.Name(t)
	good := env.Management.Kubeconfig()
	broken := []byte("not a kubeconfig")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.SystemNamespace},
		Data:       map[string][]byte{"value": good},
	}
	cluster := &navarchv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: navarchv1.ClusterSpec{Server: env.Management.Server(),
			KubeconfigSecretRef: &navarchv1.KubeconfigSecretRef{Namespace: secret.Namespace, Name: secret.Name, Key: "value"}},
	}
	for _, obj := range []client.Object{secret, cluster} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}

	reads := &secretReads{Reader: env.Client}
	clusters := clustercache.New(ctx, clustercache.Options{Logger: env.Logger})
	r := &ClusterReconciler{Client: env.Client, SecretReader: reads, Clusters: clusters, ProbeInterval: 30 * time.Second}
	probe := func(when string, ready metav1.ConditionStatus, whole, metadata int32) *clustercache.Remote {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			t.Fatalf("%s: Reconcile: %v", when, err)
		}
		got := &navarchv1.Cluster{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), got); err != nil {
			t.Fatal(err)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, navarchv1.ConditionReady); c == nil || c.Status != ready {
			t.Errorf("%s: Ready %+v, want %s", when, c, ready)
		}
		if w, m := reads.whole.Load(), reads.metadata.Load(); w != whole || m != metadata {
			t.Errorf("%s: %d whole reads of the Secret and %d of its metadata so far, want %d and %d", when, w, m, whole, metadata)
		}
		remote, err := clusters.Get(name)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		return remote
	}

	first := probe("the first probe", metav1.ConditionTrue, 1, 1)
	probe("the second probe", metav1.ConditionTrue, 1, 2)
	if again := probe("the third probe", metav1.ConditionTrue, 1, 3); again != first {
		t.Error("an unchanged Cluster got a new connection")
	}

	testenv.Update(t, env.Client, secret, func(s *corev1.Secret) { s.Data["value"] = broken })
	probe("after the Secret was broken", metav1.ConditionFalse, 2, 4)
	// A Secret that could not be connected with is read whole until it can.
	probe("the probe after that", metav1.ConditionFalse, 3, 5)
	testenv.Update(t, env.Client, secret, func(s *corev1.Secret) { s.Data["value"] = good })
	probe("after the Secret was mended", metav1.ConditionTrue, 4, 6)
	probe("the probe after that", metav1.ConditionTrue, 4, 7)
}
