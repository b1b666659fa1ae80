package controller

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/testenv"
	"github.com/navarch-io/navarch/internal/webhook"
)

// BenchmarkWebhookPush measures the bench/README.md budget for webhooks: a push delivered by
// webhook reaches Synced on 10 clusters within 2 s (run it once: -benchtime=1x).
//
// Ten Clusters are registered, each with its own client and queue in the controller, all
// reaching the management cluster's apiserver (in workload mode), where each Application
// writes a ConfigMap to a namespace of its own. The controller runs the Application and
// Cluster controllers through Run at their defaults, the Git poll included (3 minutes). Each
// of 5 rounds pushes a new version of the ConfigMap, delivers the signed push event and
// measures until all 10 Applications report Synced at the new commit:
//   - push-to-synced-ms: the mean over the rounds (goal ≤ 2000);
//   - max-push-to-synced-ms: the slowest round (goal ≤ 2000).
func BenchmarkWebhookPush(b *testing.B) {
	const clusters, rounds = 10, 5
	ctx := context.Background()
	ns := benchNamespace(b, "bench-webhook")
	putWebhookSecret(b, ns, testWebhookSecret)
	repoURL, first := webhookRepo(b, ns, "0")
	for i := range clusters {
		name := fmt.Sprintf("%s-c%02d", ns, i)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-kubeconfig"},
			Data:       map[string][]byte{"value": env.Management.Kubeconfig()},
		}
		if err := env.Client.Create(ctx, secret); err != nil {
			b.Fatal(err)
		}
		cluster := &navarchv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: navarchv1.ClusterSpec{
				Server:              env.Management.Server(),
				KubeconfigSecretRef: &navarchv1.KubeconfigSecretRef{Namespace: ns, Name: secret.Name, Key: "value"},
			},
		}
		if err := env.Client.Create(ctx, cluster); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = env.Client.Delete(context.Background(), cluster) })
	}
	url := startWebhookController(b, Options{
		SystemNamespace: ns, Namespaces: []string{ns}, Controllers: []string{"application", "cluster"},
	})
	for i := range clusters {
		app := &navarchv1.Application{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%02d", i)},
			Spec: navarchv1.ApplicationSpec{
				Source:      navarchv1.ApplicationSource{RepoURL: repoURL, Path: "deploy", TargetRevision: "main"},
				Destination: navarchv1.ApplicationDestination{Name: fmt.Sprintf("%s-c%02d", ns, i), Namespace: fmt.Sprintf("%s-%02d", ns, i)},
				SyncPolicy: &navarchv1.SyncPolicy{
					Automated:   &navarchv1.SyncPolicyAutomated{Prune: true},
					SyncOptions: []navarchv1.SyncOption{"CreateNamespace=true"},
				},
			},
		}
		if err := env.Client.Create(ctx, app); err != nil {
			b.Fatal(err)
		}
	}
	testenv.EventuallyWithin(b, 2*time.Minute, "the 10 Applications are synced at the first commit", func() string {
		var list navarchv1.ApplicationList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		for i := range list.Items {
			if p := syncedAt(&list.Items[i], first); p != "" {
				return p
			}
		}
		return ""
	})

	var total, worst time.Duration
	for b.Loop() {
		total, worst = 0, 0
		for r := range rounds {
			commit := pushVersion(b, ns, fmt.Sprint(r+1))
			body := pushEvent(b, repoURL, "bench", ns, "main", commit)
			d := timeToSynced(b, ns, clusters, commit, func() {
				if code, text := deliver(b, url, webhook.EventPush, fmt.Sprintf("%s-%d", ns, r), body, webhook.Sign(testWebhookSecret, body)); code != http.StatusAccepted {
					b.Fatalf("push delivery: %d %q", code, text)
				}
			})
			total += d
			worst = max(worst, d)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/rounds, "push-to-synced-ms")
	b.ReportMetric(float64(worst.Milliseconds()), "max-push-to-synced-ms")
}

// timeToSynced watches the Applications of ns, calls deliver, and returns how long after it
// began all n Applications are Synced at commit.
func timeToSynced(b *testing.B, ns string, n int, commit string, deliver func()) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := env.Client.Watch(ctx, &navarchv1.ApplicationList{}, client.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	deliver()
	synced := map[string]bool{}
	for ev := range w.ResultChan() {
		app, ok := ev.Object.(*navarchv1.Application)
		if !ok {
			continue
		}
		synced[app.Name] = syncedAt(app, commit) == ""
		done := 0
		for _, s := range synced {
			if s {
				done++
			}
		}
		if done == n {
			return time.Since(start)
		}
	}
	b.Fatalf("the %d Applications were not all Synced at %.8s within 30 s: %v", n, commit, synced)
	return 0
}
