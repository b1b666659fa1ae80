package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/githubserver"
	"github.com/navarch-io/navarch/internal/testenv"
	"github.com/navarch-io/navarch/internal/webhook"
)

// webhookAddr is where the package's controller (TestMain) receives webhooks.
var webhookAddr = func() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}()

// testWebhookSecret signs the deliveries of these tests.
var testWebhookSecret = []byte("webhook-test-secret")

// putWebhookSecret creates or replaces the webhook Secret of namespace ns.
func putWebhookSecret(t testing.TB, ns string, secret []byte) {
	t.Helper()
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: WebhookSecretName}, Data: map[string][]byte{WebhookSecretKey: secret}}
	err := env.Client.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		err = env.Client.Update(ctx, s)
	}
	if err != nil {
		t.Fatalf("put the webhook Secret in %s: %v", ns, err)
	}
}

// startWebhookController runs a controller with opts and a webhook endpoint until the test
// ends, and returns the endpoint's URL once it answers.
func startWebhookController(t testing.TB, opts Options) string {
	t.Helper()
	opts.Config = env.Management.RESTConfig()
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.Logger = controllerLogs.Wrap(env.Logger)
	if opts.WebhookAddr == "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		opts.WebhookAddr = l.Addr().String()
		_ = l.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	url := "http://" + opts.WebhookAddr + webhook.Path
	waitForEndpoint(t, url)
	return url
}

func waitForEndpoint(t testing.TB, url string) {
	t.Helper()
	testenv.Eventually(t, "the webhook endpoint answers", func() string {
		resp, err := http.Get(url) //nolint:noctx // a probe
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			return fmt.Sprintf("GET answered %d", resp.StatusCode)
		}
		return ""
	})
}

// deliver posts body to the endpoint at url as GitHub would, with signature as the
// X-Hub-Signature-256 header ("" sends none).
func deliver(t testing.TB, url, event, id string, body []byte, signature string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.HeaderEvent, event)
	req.Header.Set(webhook.HeaderDelivery, id)
	if signature != "" {
		req.Header.Set(webhook.HeaderSignature, signature)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("deliver %s %s: %v", event, id, err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(text))
}

// pushEvent is the payload GitHub sends when branch of the repository at repoURL moves to
// commit.
func pushEvent(t testing.TB, repoURL, owner, name, branch, commit string) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"ref": "refs/heads/" + branch, "before": strings.Repeat("0", 40), "after": commit,
		"repository": map[string]any{
			"name": name, "full_name": owner + "/" + name, "owner": map[string]any{"name": owner, "login": owner},
			"clone_url": repoURL, "default_branch": "main", "master_branch": "main",
		},
		"commits": []any{map[string]any{"id": commit, "message": "change"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func deliveries(t testing.TB, event string, result webhook.Result) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := webhookDeliveries.WithLabelValues(event, string(result)).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestWebhookDeliveries sends real HTTP requests to the endpoint of a running controller: only
// deliveries signed with the secret of the Secret are queued, whatever else comes is refused
// with the status GitHub expects, and a full queue refuses more. The controller is a standby
// replica (another holds the leader lease), so its worker never takes an event and its queue
// of 2 fills deterministically.
func TestWebhookDeliveries(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	ctx := context.Background()
	now := metav1.NewMicroTime(time.Now())
	if err := env.Client.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "navarch-controller"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: new("another-replica"), LeaseDurationSeconds: new(int32(3600)), AcquireTime: &now, RenewTime: &now,
		},
	}); err != nil {
		t.Fatal(err)
	}
	url := startWebhookController(t, Options{
		SystemNamespace: ns, LeaderElection: true, LeaderElectionNamespace: ns,
		Controllers: []string{"cluster"}, WebhookQueueSize: 2,
	})

	push := pushEvent(t, "https://github.com/acme/platform.git", "acme", "platform", "main", strings.Repeat("1", 40))
	other := pushEvent(t, "https://github.com/acme/platform.git", "acme", "platform", "release", strings.Repeat("2", 40))
	ping := []byte(`{"zen": "Practicality beats purity.", "hook_id": 7}`)
	pull := []byte(`{"action": "opened", "number": 3, "repository": {"name": "platform", "full_name": "acme/platform", "owner": {"login": "acme"}}}`)
	sign := func(body []byte) string { return webhook.Sign(testWebhookSecret, body) }

	// No Secret yet: nothing can be verified, so nothing is accepted.
	if code, text := deliver(t, url, webhook.EventPush, "before-the-secret", push, sign(push)); code != http.StatusServiceUnavailable {
		t.Errorf("a signed push before the Secret exists: %d %q, want 503", code, text)
	}
	putWebhookSecret(t, ns, testWebhookSecret)
	testenv.Eventually(t, "the endpoint reads the new Secret", func() string {
		if code, text := deliver(t, url, webhook.EventPing, "ping", ping, sign(ping)); code != http.StatusOK {
			return fmt.Sprintf("a signed ping: %d %q", code, text)
		}
		return ""
	})

	unauthorized := deliveries(t, webhook.EventPush, webhook.ResultUnauthorized)
	oversized := bytes.Join([][]byte{push[:len(push)-1], []byte(`,"padding":"`), bytes.Repeat([]byte("x"), 1<<20), []byte(`"}`)}, nil)
	for _, tc := range []struct {
		name, event string
		body        []byte
		signature   string
		want        int
	}{
		{"a valid push", webhook.EventPush, push, sign(push), http.StatusAccepted},
		{"a wrong signature", webhook.EventPush, push, webhook.Sign([]byte("guessed"), push), http.StatusUnauthorized},
		{"no signature", webhook.EventPush, push, "", http.StatusUnauthorized},
		{"a body replayed with another delivery's signature", webhook.EventPush, other, sign(push), http.StatusUnauthorized},
		{"an oversized payload", webhook.EventPush, oversized, sign(oversized), http.StatusRequestEntityTooLarge},
		{"a ping", webhook.EventPing, ping, sign(ping), http.StatusOK},
		{"an event not acted on", "issues", ping, sign(ping), http.StatusOK},
		{"a valid pull request", webhook.EventPullRequest, pull, sign(pull), http.StatusAccepted},
		{"a valid push with the queue full", webhook.EventPush, other, sign(other), http.StatusServiceUnavailable},
	} {
		id := strings.ReplaceAll(tc.name, " ", "-")
		code, text := deliver(t, url, tc.event, id, tc.body, tc.signature)
		if code != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, code, text, tc.want)
		}
		if code >= 400 && len(controllerLogs.Lines("Webhook delivery refused", "delivery", id)) == 0 {
			t.Errorf("%s: no log line says delivery %s was refused", tc.name, id)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
		t.Errorf("GET: %d, Allow %q; want 405, POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if got := deliveries(t, webhook.EventPush, webhook.ResultUnauthorized) - unauthorized; got != 3 {
		t.Errorf("navarch_webhook_deliveries_total{event=push,result=unauthorized} rose by %v, want 3", got)
	}

	// A new secret applies to the next delivery; the old one no longer does.
	rotated := []byte("rotated-secret")
	putWebhookSecret(t, ns, rotated)
	testenv.Eventually(t, "the endpoint reads the rotated Secret", func() string {
		if code, text := deliver(t, url, webhook.EventPing, "ping-rotated", ping, webhook.Sign(rotated, ping)); code != http.StatusOK {
			return fmt.Sprintf("a ping signed with the new secret: %d %q", code, text)
		}
		return ""
	})
	if code, text := deliver(t, url, webhook.EventPing, "ping-old-secret", ping, sign(ping)); code != http.StatusUnauthorized {
		t.Errorf("a ping signed with the old secret: %d %q, want 401", code, text)
	}
	for _, line := range controllerLogs.Lines("Webhook delivery refused", "event", webhook.EventPush) {
		for _, v := range line.Values {
			if s := fmt.Sprint(v); strings.Contains(s, string(testWebhookSecret)) || strings.Contains(s, "xxxx") || strings.Contains(s, "refs/heads") {
				t.Errorf("a refusal logs the secret or the payload: %v", line.Values)
			}
		}
	}
}

// webhookRepo creates a Git repository whose deploy/ holds a ConfigMap at version, and returns
// its URL and first commit.
func webhookRepo(t testing.TB, name, version string) (string, string) {
	t.Helper()
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "deploy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "deploy", "config.yaml"), []byte(webhookConfigMap(version)), 0o644); err != nil {
		t.Fatal(err)
	}
	commit, err := env.Git.CreateRepo(name, src)
	if err != nil {
		t.Fatalf("create repo: %v", err)
	}
	return env.Git.RepoURL(name), commit
}

func webhookConfigMap(version string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  version: \"" + version + "\"\n"
}

// pushVersion commits a new version of the ConfigMap to main of repository name.
func pushVersion(t testing.TB, name, version string) string {
	t.Helper()
	commit, err := env.Git.Update(name, "version "+version, func(dir string) error {
		return os.WriteFile(filepath.Join(dir, "deploy", "config.yaml"), []byte(webhookConfigMap(version)), 0o644)
	})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	return commit
}

// syncedAt says what is missing for app to be synced at commit, or "".
func syncedAt(app *navarchv1.Application, commit string) string {
	if app.Status.Sync.Revision != commit || app.Status.Sync.Status != navarchv1.SyncStatusSynced {
		return fmt.Sprintf("%s is %s at %.8s (want Synced at %.8s)", app.Name, app.Status.Sync.Status, app.Status.Sync.Revision, commit)
	}
	return ""
}

// TestWebhookPushSyncsTheNewCommitAtOnce: the controller runs at its production Git poll (3
// minutes); a push is not seen before then, unless GitHub's webhook says so, which makes the
// Applications that follow the branch sync the new commit at once: both the one naming the
// branch and the one following HEAD, the default branch.
func TestWebhookPushSyncsTheNewCommitAtOnce(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	ctx := context.Background()
	name := testenv.Name(t)
	repoURL, first := webhookRepo(t, name, "1")
	putWebhookSecret(t, ns, testWebhookSecret)
	url := startWebhookController(t, Options{
		SystemNamespace: ns, Namespaces: []string{ns}, Controllers: []string{"application"},
	})

	var apps []*navarchv1.Application
	for appName, revision := range map[string]string{"tracks-main": "main", "tracks-head": ""} {
		app := &navarchv1.Application{}
		if err := yaml.UnmarshalStrict([]byte(fmt.Sprintf(`
metadata: {name: %s, namespace: %s}
spec:
  source: {repoURL: %q, path: deploy, targetRevision: %q}
  destination: {name: in-cluster, namespace: %s-%s}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, appName, ns, repoURL, revision, ns, appName)), app); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		apps = append(apps, app)
	}
	allSyncedAt := func(commit string) func() string {
		return func() string {
			var problems []string
			for _, a := range apps {
				got := &navarchv1.Application{}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(a), got); err != nil {
					t.Fatal(err)
				}
				if p := syncedAt(got, commit); p != "" {
					problems = append(problems, p)
				}
			}
			return strings.Join(problems, "; ")
		}
	}
	testenv.Eventually(t, "both Applications are synced at the first commit", allSyncedAt(first))

	second := pushVersion(t, name, "2")
	testenv.Consistently(t, 5*time.Second, "without a webhook, the Applications stay at the first commit until the poll", func() string {
		if msg := allSyncedAt(first)(); msg != "" {
			return msg
		}
		return ""
	})

	body := pushEvent(t, repoURL, "local", name, "main", second)
	delivered := time.Now()
	if code, text := deliver(t, url, webhook.EventPush, "push-"+name, body, webhook.Sign(testWebhookSecret, body)); code != http.StatusAccepted {
		t.Fatalf("push delivery: %d %q, want 202", code, text)
	}
	testenv.EventuallyWithin(t, 30*time.Second, "both Applications sync the pushed commit well before the 3-minute poll", allSyncedAt(second))
	t.Logf("synced %s after the webhook", time.Since(delivered).Round(time.Millisecond))

	for _, a := range apps {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: a.Spec.Destination.Namespace, Name: "web-config"}, cm); err != nil {
			t.Fatal(err)
		}
		if cm.Data["version"] != "2" {
			t.Errorf("%s's ConfigMap is at version %q, want 2", a.Name, cm.Data["version"])
		}
	}
	lines := controllerLogs.Lines("Webhook push handled", "delivery", "push-"+name)
	if len(lines) != 1 || fmt.Sprint(lines[0].Values["applications"]) != "2" || fmt.Sprint(lines[0].Values["repository"]) != "local/"+name {
		t.Errorf("log lines for the push: %v; want one that says it refreshed 2 Applications of local/%s", lines, name)
	}
}

// TestWebhookPullRequestAppearsAtOnce: a pullRequest generator polls GitHub every 30 minutes
// (requeueAfterSeconds' default). A pull request opened without a webhook waits for that; with
// GitHub's webhook delivered to the controller, a pull request's preview appears, and goes, at
// once.
func TestWebhookPullRequestAppearsAtOnce(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	putWebhookSecret(t, testenv.SystemNamespace, testWebhookSecret)
	gh, err := githubserver.Start(githubserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gh.Close() })
	gh.AddRepo("acme", "webhooks", githubserver.Repo{DefaultBranch: "main", Branches: map[string]string{"main": strings.Repeat("a", 40)}})
	open := func(n int) {
		gh.OpenPR("acme", "webhooks", githubserver.PullRequest{
			Title: fmt.Sprintf("change %d", n), Head: fmt.Sprintf("change-%d", n), Base: "main",
			HeadSHA: fmt.Sprintf("%040x", n), Author: "ana",
		})
	}
	open(1)
	applyAppSet(t, ns, fmt.Sprintf(`
metadata: {name: previews}
spec:
  generators:
  - pullRequest:
      github: {owner: acme, repo: webhooks, api: %q}
  template:
    metadata: {name: 'preview-{{number}}'}
    spec:
      source: {repoURL: 'https://git.example/webhooks.git', targetRevision: '{{head_sha}}', path: deploy}
      destination: {name: in-cluster, namespace: 'preview-{{number}}'}
`, gh.APIURL()))
	waitForApps(t, ns, "preview-1")

	// Without a webhook, nothing tells the controller before its next poll.
	open(2)
	testenv.Consistently(t, 5*time.Second, "without a webhook, the new pull request waits for the poll", func() string {
		if got := appNames(listApps(t, ns)); got != "preview-1" {
			return "Applications are " + got
		}
		return ""
	})

	waitForEndpoint(t, "http://"+webhookAddr+webhook.Path)
	gh.AddHook("acme", "webhooks", "http://"+webhookAddr+webhook.Path, string(testWebhookSecret))
	open(3)
	testenv.EventuallyWithin(t, 30*time.Second, "the webhook of pull request 3 shows the open pull requests", func() string {
		if got := appNames(listApps(t, ns)); got != "preview-1,preview-2,preview-3" {
			return "Applications are " + got
		}
		return ""
	})
	gh.ClosePR("acme", "webhooks", 1, true)
	testenv.EventuallyWithin(t, 30*time.Second, "the webhook of the closed pull request 1 removes its preview", func() string {
		if got := appNames(listApps(t, ns)); got != "preview-2,preview-3" {
			return "Applications are " + got
		}
		return ""
	})
	for _, d := range gh.Deliveries() {
		if d.StatusCode != http.StatusAccepted {
			t.Errorf("delivery %s (%s %s): %d %v, want 202", d.ID, d.Event, d.Action, d.StatusCode, d.Err)
		}
	}
	if lines := controllerLogs.Lines("Webhook pull request handled", "repository", "acme/webhooks"); len(lines) < 2 {
		t.Errorf("log lines of the pull request events: %v; want one per delivery", lines)
	}
}

// TestWebhookIndexKeys: what Applications and ApplicationSets are indexed under, which is what
// events are matched against.
func TestWebhookIndexKeys(t *testing.T) {
	app := func(repoURL, revision string) *navarchv1.Application {
		return &navarchv1.Application{Spec: navarchv1.ApplicationSpec{Source: navarchv1.ApplicationSource{RepoURL: repoURL, TargetRevision: revision}}}
	}
	chart := app("https://github.com/acme/platform", "main")
	chart.Spec.Source.Chart = "platform"
	var refs gitRefs
	for _, tc := range []struct {
		app  *navarchv1.Application
		want gitRef // what a push must move to concern the Application; zero for nothing
	}{
		{app("https://github.com/Acme/Platform.git", "main"), gitRef{"github.com/acme/platform", "main"}},
		{app("git@github.com:acme/platform", "refs/heads/main"), gitRef{"github.com/acme/platform", "main"}},
		{app("https://github.com/acme/platform/", ""), gitRef{"github.com/acme/platform", "HEAD"}},
		{app("https://github.com/acme/platform", "HEAD"), gitRef{"github.com/acme/platform", "HEAD"}},
		{app("https://github.com/acme/platform", "v1.0.0"), gitRef{"github.com/acme/platform", "v1.0.0"}},
		{app("", "main"), gitRef{}},
		{chart, gitRef{}}, // a Helm repository's chart
	} {
		name := tc.app.Spec.Source.RepoURL + "@" + tc.app.Spec.Source.TargetRevision
		for _, moved := range []gitRef{
			{"github.com/acme/platform", "main"}, {"github.com/acme/platform", "HEAD"},
			{"github.com/acme/platform", "v1.0.0"}, {"github.com/acme/other", "main"}, {"", "main"},
		} {
			if got, want := refs.follows(tc.app, map[gitRef]bool{moved: true}), moved == tc.want; got != want {
				t.Errorf("%s, a push of %v: follows %t, want %t", name, moved, got, want)
			}
		}
	}
	// Each of the 5 Git URLs is parsed once, however often it is asked about.
	if len(refs.repoKeys) != 5 {
		t.Errorf("repository keys of %d URLs remembered, want the 5 Git URLs asked about: %q", len(refs.repoKeys), refs.repoKeys)
	}

	set := &navarchv1.ApplicationSet{}
	if err := yaml.UnmarshalStrict([]byte(`
spec:
  generators:
  - git: {repoURL: 'https://github.com/Acme/Config.git', revision: main, directories: [{path: apps/*}]}
  - matrix:
      generators:
      - clusters: {}
      - merge:
          mergeKeys: [name]
          generators:
          - pullRequest: {github: {owner: Acme, repo: Platform}}
          - matrix:
              generators:
              - scmProvider: {github: {organization: Acme}}
              - git: {repoURL: 'git@github.com:acme/config', files: [{path: x.json}]}
  - pullRequest: {github: {owner: acme, repo: platform}}
  template: {metadata: {name: x}, spec: {source: {repoURL: x}, destination: {name: in-cluster}}}
`), set); err != nil {
		t.Fatal(err)
	}
	got := webhookRepositoryKeys(set)
	slices.Sort(got)
	if want := []string{"git:github.com/acme/config", "org:acme", "pulls:acme/platform"}; !slices.Equal(got, want) {
		t.Errorf("ApplicationSet keys %q, want %q", got, want)
	}
}
