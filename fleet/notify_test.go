package fleet_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/fixture"
	"github.com/navarch-io/navarch/internal/githubserver"
	"github.com/navarch-io/navarch/internal/notify"
	"github.com/navarch-io/navarch/internal/notify/notifytest"
	"github.com/navarch-io/navarch/internal/testenv"
)

// accepted returns the bodies r answered 200, decoded, oldest first.
func accepted(t *testing.T, r *notifytest.Receiver) []notify.Message {
	t.Helper()
	var out []notify.Message
	for _, d := range r.Requests() {
		if d.Status != http.StatusOK {
			continue
		}
		var m notify.Message
		if err := json.Unmarshal(d.Body, &m); err != nil {
			t.Fatalf("a body that is not a JSON message: %s", d.Body)
		}
		out = append(out, m)
	}
	return out
}

// triggersOf lists "trigger application" of each message.
func triggersOf(msgs []notify.Message) string {
	var out []string
	for _, m := range msgs {
		name := ""
		if m.Application != nil {
			name = m.Application.Name
		}
		out = append(out, string(m.Trigger)+" "+name)
	}
	return strings.Join(out, ", ")
}

// configureNotifications writes the ConfigMap and Secret navarch-notifications, as an
// operator does, and removes them when the test ends.
func configureNotifications(t *testing.T, config string, secret map[string]string) {
	t.Helper()
	ctx := context.Background()
	meta := metav1.ObjectMeta{Namespace: testenv.SystemNamespace, Name: notify.Name}
	s := &corev1.Secret{ObjectMeta: meta, StringData: secret}
	cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{notify.ConfigKey: config}}
	for _, obj := range []client.Object{s, cm} {
		if err := mgmt.Create(ctx, obj); err != nil {
			t.Fatalf("create %T: %v", obj, err)
		}
	}
	t.Cleanup(func() {
		for _, obj := range []client.Object{cm, s} {
			if err := mgmt.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %T: %v", obj, err)
			}
		}
	})
}

// logged waits for the controller to log msg with key=value.
func logged(t *testing.T, logs *testenv.LogRecorder, msg, key, value string) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("the log line %q with %s=%s", msg, key, value), func() string {
		if len(logs.Lines(msg, key, value)) == 0 {
			return "not logged yet"
		}
		return ""
	})
}

func withRecordedLogs(t *testing.T) *testenv.LogRecorder {
	logs := &testenv.LogRecorder{}
	controllerOptions.Logger = logs.Wrap(env.Logger)
	restartController(t)
	t.Cleanup(func() {
		controllerOptions.Logger = env.Logger
		restartController(t)
	})
	return logs
}

// A team subscribes its Applications' OutOfSync and sync results to a signed webhook, a chat
// and two flaky endpoints: each transition arrives once at each of them, however often the
// Application is compared again; the signature verifies with the key from the Secret; an
// endpoint that answers 500 twice gets the message after retries; one that always fails is a
// metric and a log line, and the Application says nothing of it; an Application the selector
// does not match sends nothing.
func TestNotificationsOneMessagePerTransition(t *testing.T) {
	logs := withRecordedLogs(t)
	ns := testenv.Namespace(t, mgmt)
	hook, chat := notifytest.NewReceiver(t), notifytest.NewReceiver(t)
	flaky := notifytest.NewReceiver(t, http.StatusInternalServerError, http.StatusInternalServerError)
	dead := notifytest.NewReceiver(t, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500)
	retriesBefore := counter(t, "navarch_notifications_delivery_errors_total", map[string]string{"destination": "flaky"})
	const key = "the team's shared key"
	configureNotifications(t, fmt.Sprintf(`
destinations:
- name: hook
  webhook: {urlSecretKey: hook-url, hmacSecretKey: hook-hmac}
- name: chat
  slack: {urlSecretKey: chat-url}
- name: flaky
  webhook: {url: '%s'}
- name: dead
  webhook: {url: '%s'}
subscriptions:
- name: team
  triggers: [OutOfSync, SyncSucceeded, SyncFailed]
  destinations: [hook, chat, flaky, dead]
  selector: {labels: 'notify-test=%s'}
`, flaky.URL, dead.URL, ns), map[string]string{"hook-url": hook.URL, "hook-hmac": key, "chat-url": chat.URL + "/services/T0/B0/x"})
	logged(t, logs, "Notification configuration loaded", "subscriptions", "1")

	url := repo(t, map[string]string{"web/cm.yaml": webConfigMap, "other/cm.yaml": strings.Replace(webConfigMap, "name: web", "name: other", 1)})
	app := func(name, labels string) *navarchv1.Application {
		return createApp(t, ns, fmt.Sprintf(`
metadata: {name: %s, labels: {%s}}
spec:
  source: {repoURL: %s, targetRevision: main, path: %s}
  destination: {name: east, namespace: %s-%s}
  syncPolicy: {syncOptions: [CreateNamespace=true]}
`, name, labels, url, name, ns, name))
	}
	web := app("web", "notify-test: "+ns)
	other := app("other", "team: other")
	syncApps := func(apps ...*navarchv1.Application) {
		for _, a := range apps {
			waitForApp(t, a, "OutOfSync", func(a *navarchv1.Application) bool { return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync })
			requestSync(t, a)
		}
		for _, a := range apps {
			waitForApp(t, a, "Synced and Healthy after its sync", func(a *navarchv1.Application) bool {
				return syncedAndHealthy(a) && a.Operation == nil && a.Status.OperationState != nil && a.Status.OperationState.Phase == navarchv1.OperationSucceeded
			})
		}
	}
	expect := func(want string) {
		t.Helper()
		testenv.Eventually(t, "the webhook received "+want, func() string {
			if got := triggersOf(accepted(t, hook)); got != want {
				return "received " + got
			}
			return ""
		})
	}

	// Created (its first comparison is not drift) and synced: one SyncSucceeded.
	syncApps(web, other)
	expect("SyncSucceeded web")
	// Someone edits the ConfigMap in the cluster: web drifts.
	east := workloads["east"].Client
	testenv.Update(t, east, &corev1.ConfigMap{ObjectMeta: objectMeta(ns+"-web", "web")}, func(cm *corev1.ConfigMap) { cm.Data["greeting"] = "edited" })
	expect("SyncSucceeded web, OutOfSync web")
	// More comparisons of the same state send nothing.
	refresh(t, web)
	refresh(t, web)
	syncApps(web)
	expect("SyncSucceeded web, OutOfSync web, SyncSucceeded web")

	// Every destination gets each message once; flaky's may come in another order, since
	// its retries wait while the next message goes through.
	want := "SyncSucceeded web, OutOfSync web, SyncSucceeded web"
	wantSorted := "OutOfSync web, SyncSucceeded web, SyncSucceeded web"
	allDelivered := func() string {
		var wrong []string
		if got := triggersOf(accepted(t, hook)); got != want {
			wrong = append(wrong, fmt.Sprintf("hook received %q, want %q", got, want))
		}
		flakyGot := accepted(t, hook)[:0:0]
		flakyGot = append(flakyGot, accepted(t, flaky)...)
		slices.SortFunc(flakyGot, func(a, b notify.Message) int { return strings.Compare(string(a.Trigger), string(b.Trigger)) })
		if got := triggersOf(flakyGot); got != wantSorted {
			wrong = append(wrong, fmt.Sprintf("flaky received %q, want %q in any order", got, wantSorted))
		}
		if got := len(chat.Requests()); got != 3 {
			wrong = append(wrong, fmt.Sprintf("chat received %d messages, want 3", got))
		}
		return strings.Join(wrong, "; ")
	}
	testenv.Eventually(t, "every destination received each message", allDelivered)
	testenv.Consistently(t, 3*time.Second, "one message per transition at every destination", allDelivered)

	// Signed with the key of the Secret, over the exact body; one delivery id per message.
	ids := map[string]bool{}
	for _, d := range hook.Requests() {
		// Over the attempt's timestamp and the exact body, so that a replay can be refused.
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write([]byte(d.Header.Get("X-Navarch-Timestamp") + "."))
		mac.Write(d.Body)
		if got, want := d.Header.Get("X-Navarch-Signature"), "sha256="+hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(got), []byte(want)) {
			t.Errorf("X-Navarch-Signature %q does not verify with the key of the Secret (want %q)", got, want)
		}
		ids[d.Header.Get("X-Navarch-Delivery")] = true
	}
	if len(ids) != 3 || ids[""] {
		t.Errorf("delivery ids %v, want 3 distinct ids", ids)
	}
	msgs := accepted(t, hook)
	if m := msgs[1]; m.Severity != "warning" || m.Subscription != "team" || m.Application.Namespace != ns || m.Application.Project != "default" ||
		m.Application.Sync != navarchv1.SyncStatusOutOfSync || len(m.Application.Revision) != 40 || m.Application.Destination != "east/"+ns+"-web" {
		t.Errorf("the OutOfSync message is %+v %+v", m, m.Application)
	}
	if op := msgs[2].Application.Operation; op == nil || op.Phase != navarchv1.OperationSucceeded || op.InitiatedBy != "test" {
		t.Errorf("the SyncSucceeded message has operation %+v", op)
	}

	// The chat got Slack's shape: one text field, readable.
	var slack map[string]any
	if err := json.Unmarshal(chat.Requests()[1].Body, &slack); err != nil {
		t.Fatal(err)
	}
	if text, _ := slack["text"].(string); len(slack) != 1 || !strings.Contains(text, "*OutOfSync* Application "+ns+"/web is OutOfSync with ") {
		t.Errorf("the chat received %v", slack)
	}

	// The flaky endpoint answered 500 twice: the messages it refused came with a later
	// attempt, under the same delivery id, and the errors are counted and logged.
	reqs := flaky.Requests()
	acceptedIDs := map[string]int{}
	for _, d := range reqs {
		if d.Status == http.StatusOK {
			acceptedIDs[d.Header.Get("X-Navarch-Delivery")]++
		}
	}
	for _, d := range reqs {
		if id := d.Header.Get("X-Navarch-Delivery"); acceptedIDs[id] != 1 {
			t.Errorf("delivery %q (answered %d) was accepted %d times at flaky, want once", id, d.Status, acceptedIDs[id])
		}
	}
	if len(reqs) != 5 {
		t.Errorf("flaky received %d requests, want 5 (3 messages, 2 refused attempts)", len(reqs))
	}
	if got := counter(t, "navarch_notifications_delivery_errors_total", map[string]string{"destination": "flaky"}); got-retriesBefore != 2 {
		t.Errorf("navarch_notifications_delivery_errors_total{destination=flaky} grew by %v, want 2", got-retriesBefore)
	}
	if got := len(logs.Lines("Notification attempt failed; retrying", "destination", "flaky")); got != 2 {
		t.Errorf("%d retries of flaky logged, want 2", got)
	}
	if n := counter(t, "navarch_notifications_delivery_errors_total", map[string]string{"destination": "dead"}); n < 3 {
		t.Errorf("navarch_notifications_delivery_errors_total{destination=dead} is %v, want every failed attempt counted", n)
	}
	logged(t, logs, "Notification sent", "destination", "hook")

	// A failing destination is not the Application's problem.
	got := getApp(t, web)
	for _, c := range got.Status.Conditions {
		if strings.Contains(strings.ToLower(c.Type+c.Reason+c.Message), "notif") {
			t.Errorf("the Application has a condition about notifications: %+v", c)
		}
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, navarchv1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("web is not Ready while a destination fails: %+v", c)
	}
	// And the Application the selector does not match sent nothing, though it synced.
	for _, m := range accepted(t, hook) {
		if m.Application.Name == other.Name {
			t.Errorf("a message about %s, which the selector excludes", other.Name)
		}
	}
}

// Two failed sync operations are two messages; one failed operation seen again and again is
// one.
func TestNotificationsSyncFailedOncePerOperation(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	hook := notifytest.NewReceiver(t)
	configureNotifications(t, `
destinations:
- name: hook
  webhook: {urlSecretKey: url}
subscriptions:
- name: failures
  triggers: [SyncFailed]
  destinations: [hook]
  selector: {applicationSets: [], projects: [default], labels: 'notify-test=`+ns+`'}
`, map[string]string{"url": hook.URL})
	url := repo(t, map[string]string{
		// No CRD defines Sprocket: every attempt fails.
		"broken/sprocket.yaml": "apiVersion: notify.example.com/v1\nkind: Sprocket\nmetadata: {name: s}\n",
	})
	broken := createApp(t, ns, fmt.Sprintf(`
metadata: {name: broken, labels: {notify-test: %s}}
spec:
  source: {repoURL: %s, targetRevision: main, path: broken}
  destination: {name: east, namespace: %s-broken}
  syncPolicy: {syncOptions: [CreateNamespace=true]}
`, ns, url, ns))
	waitForApp(t, broken, "compared", func(a *navarchv1.Application) bool { return a.Status.Sync.Status != "" })
	var first string
	for i := range 2 {
		requestSync(t, broken)
		s := waitForApp(t, broken, "its operation failed", func(a *navarchv1.Application) bool {
			return a.Operation == nil && operationDone(a) && a.Status.OperationState.ID != first
		}).Status.OperationState
		first = s.ID
		testenv.Eventually(t, fmt.Sprintf("SyncFailed message %d", i+1), func() string {
			if got := len(accepted(t, hook)); got != i+1 {
				return fmt.Sprintf("%d messages", got)
			}
			return ""
		})
		refresh(t, broken)
	}
	testenv.Consistently(t, 3*time.Second, "two failed operations, two messages", func() string {
		if got := triggersOf(accepted(t, hook)); got != "SyncFailed broken, SyncFailed broken" {
			return "received " + got
		}
		return ""
	})
	for _, m := range accepted(t, hook) {
		if !strings.Contains(m.Summary, "Sprocket") || m.Application.Operation.Phase != navarchv1.OperationFailed {
			t.Errorf("a SyncFailed message that does not say why: %q", m.Summary)
		}
	}
}

// A configuration mistake is an Event on the ConfigMap naming the field and a metric, and
// changes nothing else; fixing it takes effect without a restart.
func TestNotificationsInvalidConfigIsReportedOnTheConfigMap(t *testing.T) {
	ctx := context.Background()
	hook := notifytest.NewReceiver(t)
	configureNotifications(t, `
destinations:
- {name: hook, webhook: {urlSecretKey: url}}
subscriptions:
- {name: s, triggers: [OutOfSink], destinations: [hook]}
`, map[string]string{"url": hook.URL})
	testenv.Eventually(t, "a Warning Event on the ConfigMap naming the field", func() string {
		var events corev1.EventList
		if err := mgmt.List(ctx, &events, client.InNamespace(testenv.SystemNamespace)); err != nil {
			return err.Error()
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "ConfigMap" && e.InvolvedObject.Name == notify.Name && e.Reason == "InvalidNotificationConfig" &&
				e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, `subscriptions[0].triggers[0]: unknown trigger "OutOfSink"`) {
				return ""
			}
		}
		return fmt.Sprintf("%d Events, none about the ConfigMap", len(events.Items))
	})
	if v := gauge(t, "navarch_notifications_config_valid"); v != 0 {
		t.Errorf("navarch_notifications_config_valid is %v, want 0", v)
	}
	testenv.Update(t, mgmt, &corev1.ConfigMap{ObjectMeta: objectMeta(testenv.SystemNamespace, notify.Name)}, func(cm *corev1.ConfigMap) {
		cm.Data[notify.ConfigKey] = strings.Replace(cm.Data[notify.ConfigKey], "OutOfSink", "OutOfSync", 1)
	})
	testenv.Eventually(t, "the fixed configuration is loaded", func() string {
		if v := gauge(t, "navarch_notifications_config_valid"); v != 1 {
			return fmt.Sprintf("navarch_notifications_config_valid is %v", v)
		}
		return ""
	})
}

// counter returns the sum of the counters name{labels}.
func counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	sum := 0.0
	for _, m := range fixture.Metrics(t, name, labels) {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

func gauge(t *testing.T, name string) float64 {
	t.Helper()
	m := fixture.Metrics(t, name, nil)
	if len(m) == 0 {
		return -1
	}
	return m[0].GetGauge().GetValue()
}

// messagesAbout keeps the messages about objects of namespace ns: other tests' objects may
// share names.
func messagesAbout(ns string, msgs []notify.Message) []notify.Message {
	var out []notify.Message
	for _, m := range msgs {
		if (m.Application != nil && m.Application.Namespace == ns) || (m.ApplicationSet != nil && m.ApplicationSet.Namespace == ns) {
			out = append(out, m)
		}
	}
	return out
}

// expectMessages waits until the receiver accepted exactly the messages want ("trigger name",
// comma-separated, in order) about ns, then checks that no other message follows for a while.
func expectMessages(t *testing.T, r *notifytest.Receiver, ns, want string) []notify.Message {
	t.Helper()
	got := func() string {
		msgs := messagesAbout(ns, accepted(t, r))
		if have := triggersOf(msgs); have != want {
			var summaries []string
			for i, m := range msgs {
				if i == 6 {
					summaries = append(summaries, "…")
					break
				}
				summaries = append(summaries, m.Summary)
			}
			return fmt.Sprintf("received %q: %s", have, strings.Join(summaries, " | "))
		}
		return ""
	}
	testenv.EventuallyWithin(t, rolloutWait, "the receiver got "+want, got)
	testenv.Consistently(t, 5*time.Second, "one message per transition: "+want, got)
	return messagesAbout(ns, accepted(t, r))
}

// A platform team subscribes to its rollout's outcomes: the first rollout (to dev, which soaks,
// then prod) completing is one RolloutCompleted, and a bad commit whose sync fails at dev is
// one RolloutHalted that says where and why; the rollout seen again and again while it stays
// halted sends nothing more. (A bad commit whose pods fail is no good here: kwok restarts
// them, dev's health flaps, and the rollout goes Halted, Progressing, Completed and back at
// the same revisions; that used to send a RolloutCompleted on each flap, which
// TestTrackerRollouts now covers.)
func TestNotificationsRolloutCompletedAndHalted(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, webSource("v1", false))
	v1, err := git.Resolve(testenv.Name(t), "main")
	if err != nil {
		t.Fatal(err)
	}
	registerStages(t, ns, stages[0], stages[2])
	hook := notifytest.NewReceiver(t)
	configureNotifications(t, `
destinations:
- {name: hook, webhook: {urlSecretKey: url}}
subscriptions:
- name: rollouts
  triggers: [RolloutCompleted, RolloutHalted]
  destinations: [hook]
  selector: {applicationSets: [web]}
`, map[string]string{"url": hook.URL})
	set := createRolloutSet(t, ns, url, `
      - matchExpressions: [{key: env, operator: In, values: [dev]}]
        minSuccessTime: 3s
      - matchExpressions: [{key: env, operator: In, values: [prod]}]`, "")
	waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, v1, "dev", "prod-a")

	msgs := expectMessages(t, hook, ns, "RolloutCompleted ")
	if m := msgs[0]; m.Severity != "info" || m.Subscription != "rollouts" || m.Application != nil || m.ApplicationSet == nil ||
		m.ApplicationSet.Name != "web" || m.ApplicationSet.UID != set.UID || m.ApplicationSet.Rollout == nil ||
		m.ApplicationSet.Rollout.Phase != navarchv1.RolloutPhaseCompleted || m.ApplicationSet.Rollout.Steps != 2 ||
		m.Summary != "ApplicationSet "+ns+"/web: rollout completed (2 steps)" {
		t.Errorf("the RolloutCompleted message is %+v, applicationSet %+v", m, m.ApplicationSet)
	}

	// No CRD defines Sprocket: dev's sync of v2 fails, which halts the rollout at dev
	// (maxFailures 0) until a new commit.
	bad := webSource("v2", false)
	bad["web/sprocket.yaml"] = "apiVersion: notify.example.com/v1\nkind: Sprocket\nmetadata: {name: s}\n"
	push(t, "web v2: a kind the clusters do not have", bad)
	refreshApps(t, ns, "dev", "prod-a")
	msgs = expectMessages(t, hook, ns, "RolloutCompleted , RolloutHalted ")
	dev := appName(ns, "dev")
	if m := msgs[1]; m.Severity != "warning" || m.ApplicationSet == nil || m.ApplicationSet.Rollout == nil ||
		m.ApplicationSet.Rollout.Phase != navarchv1.RolloutPhaseHalted || m.ApplicationSet.Rollout.Step != 1 ||
		!strings.Contains(m.ApplicationSet.Rollout.Message, dev) || !strings.Contains(m.ApplicationSet.Rollout.Message, "Sprocket") ||
		!strings.HasPrefix(m.Summary, "ApplicationSet "+ns+"/web: rollout halted at step 1: ") {
		t.Errorf("the RolloutHalted message is %+v, rollout %+v; want step 1, naming %s and the Sprocket its sync failed on", m, m.ApplicationSet.Rollout, dev)
	}
	if got := getSet(t, set).Status.Rollout; got == nil || got.Phase != navarchv1.RolloutPhaseHalted {
		t.Errorf("the receiver was told the rollout halted, but it is %+v", got)
	}
	// Comparing the halted rollout's Applications again changes nothing.
	refresh(t, &navarchv1.Application{ObjectMeta: objectMeta(ns, dev)})
	expectMessages(t, hook, ns, "RolloutCompleted , RolloutHalted ")
}

// An Application whose pod fails is Degraded: one message, with the health message, however
// often the Application is compared again.
func TestNotificationsDegradedOncePerTransition(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	hook := notifytest.NewReceiver(t)
	configureNotifications(t, `
destinations:
- {name: hook, webhook: {urlSecretKey: url}}
subscriptions:
- name: health
  triggers: [Degraded]
  destinations: [hook]
  selector: {labels: 'notify-test=`+ns+`'}
`, map[string]string{"url": hook.URL})
	url := repo(t, map[string]string{
		"batch/cm.yaml": webConfigMap,
		// A pod that fails (navarch.io/simulate: fail, see docs/dev-fleet.md) and is not
		// restarted: its health is Degraded for good.
		"batch/pod.yaml": `apiVersion: v1
kind: Pod
metadata: {name: report, annotations: {navarch.io/simulate: fail}}
spec:
  restartPolicy: Never
  containers: [{name: report, image: "registry.example.com/report:v1"}]
`,
	})
	batch := createApp(t, ns, fmt.Sprintf(`
metadata: {name: batch, labels: {notify-test: %s}}
spec:
  source: {repoURL: %s, targetRevision: main, path: batch}
  destination: {name: east, namespace: %s-batch}
  syncPolicy: {syncOptions: [CreateNamespace=true]}
`, ns, url, ns))
	waitForApp(t, batch, "OutOfSync", func(a *navarchv1.Application) bool { return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync })
	requestSync(t, batch)
	waitForApp(t, batch, "Degraded", func(a *navarchv1.Application) bool { return a.Status.Health.Status == navarchv1.HealthDegraded })
	refresh(t, batch)
	refresh(t, batch)

	msgs := expectMessages(t, hook, ns, "Degraded batch")
	got := getApp(t, batch)
	if m := msgs[0]; m.Severity != "warning" || m.Application.Health != navarchv1.HealthDegraded || m.Application.HealthMessage == "" ||
		m.Application.HealthMessage != got.Status.Health.Message || m.Application.Destination != "east/"+ns+"-batch" ||
		m.Summary != fmt.Sprintf("Application %s/batch is Degraded: %s (project default, destination east/%s-batch)", ns, got.Status.Health.Message, ns) {
		t.Errorf("the Degraded message is %+v %+v; the Application says %q", m, m.Application, got.Status.Health.Message)
	}
}

// A pull request's preview tells its author when it is ready: one PreviewReady when the
// preview is Synced and Healthy at the head commit, none more while it stays so, and one
// more after a push, at the new head. The pull requests come from a GitHub-compatible server
// (internal/githubserver); the preview deploys from the real Git server to a real cluster.
func TestNotificationsPreviewReadyOncePerCommit(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"app/cm.yaml": webConfigMap})
	head, err := git.Resolve(testenv.Name(t), "main")
	if err != nil {
		t.Fatal(err)
	}
	gh, err := githubserver.Start(githubserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gh.Close() })
	const token = "ghp_notify-test-token"
	gh.AddToken(token)
	gh.RequireAuth(true)
	gh.AddRepo("acme", "app", githubserver.Repo{DefaultBranch: "main", Branches: map[string]string{"main": head}})
	if err := mgmt.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, "gh"), StringData: map[string]string{"token": token}}); err != nil {
		t.Fatal(err)
	}
	number := gh.OpenPR("acme", "app", githubserver.PullRequest{Title: "Add login", Head: "feature/login", Base: "main", HeadSHA: head, Author: "ana", Labels: []string{"preview"}})

	hook, chat := notifytest.NewReceiver(t), notifytest.NewReceiver(t)
	configureNotifications(t, `
destinations:
- {name: chat, slack: {urlSecretKey: chat}}
- {name: hook, webhook: {urlSecretKey: hook}}
subscriptions:
- name: previews
  triggers: [PreviewReady]
  destinations: [hook, chat]
  selector: {applicationSets: [previews]}
`, map[string]string{"chat": chat.URL, "hook": hook.URL})

	set := &navarchv1.ApplicationSet{}
	if err := yaml.UnmarshalStrict(fmt.Appendf(nil, `
metadata: {name: previews, namespace: %[1]s}
spec:
  generators:
  - pullRequest:
      github: {owner: acme, repo: app, api: %[2]q, tokenRef: {secretName: gh, key: token}, labels: [preview]}
  template:
    metadata: {name: 'preview-{{number}}'}
    spec:
      source: {repoURL: %[3]s, targetRevision: '{{head_sha}}', path: app}
      destination: {name: east, namespace: '%[1]s-pr-{{number}}'}
      syncPolicy:
        automated: {prune: true}
        syncOptions: [CreateNamespace=true]
`, ns, gh.APIURL(), url), set); err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Create(ctx, set); err != nil {
		t.Fatalf("create ApplicationSet: %v", err)
	}
	t.Cleanup(func() { deleteRolloutSet(t, set) })
	preview := &navarchv1.Application{ObjectMeta: objectMeta(ns, fmt.Sprintf("preview-%d", number))}
	testenv.Eventually(t, "the ApplicationSet generates "+preview.Name, func() string {
		if err := mgmt.Get(ctx, client.ObjectKeyFromObject(preview), &navarchv1.Application{}); err != nil {
			return err.Error()
		}
		return ""
	})
	waitForApp(t, preview, "Synced and Healthy at the head commit", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && a.Status.Sync.Revision == head
	})
	ref := fmt.Sprintf("acme/app#%d@%s", number, head)
	msgs := expectMessages(t, hook, ns, "PreviewReady "+preview.Name)
	if m := msgs[0]; m.Severity != "info" || m.Application.PullRequest != ref || m.Application.Revision != head ||
		m.Application.ApplicationSet != "previews" || m.Application.Sync != navarchv1.SyncStatusSynced || m.Application.Health != navarchv1.HealthHealthy ||
		!strings.HasPrefix(m.Summary, fmt.Sprintf("Application %s/%s: preview acme/app#%d is Synced and Healthy at %.8s", ns, preview.Name, number, head)) {
		t.Errorf("the PreviewReady message is %+v %+v", m, m.Application)
	}
	if got := len(chat.Requests()); got != 1 {
		t.Errorf("the chat received %d messages, want 1", got)
	}

	// The author pushes: the preview moves to the new head and is ready there once more.
	next := push(t, "login: second try", map[string]string{"app/cm.yaml": strings.Replace(webConfigMap, "hello", "hello again", 1)})
	gh.PushPR("acme", "app", number, next)
	testenv.Update(t, mgmt, set, func(s *navarchv1.ApplicationSet) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[navarchv1.AnnotationRefresh] = time.Now().Format(time.RFC3339Nano)
	})
	waitForApp(t, preview, "Synced and Healthy at the pushed commit", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && a.Status.Sync.Revision == next
	})
	msgs = expectMessages(t, hook, ns, "PreviewReady "+preview.Name+", PreviewReady "+preview.Name)
	if got := msgs[1].Application.PullRequest; got != fmt.Sprintf("acme/app#%d@%s", number, next) {
		t.Errorf("the second PreviewReady is about %q, want the pushed commit %.8s", got, next)
	}
	if got := len(chat.Requests()); got != 2 {
		t.Errorf("the chat received %d messages, want 2", got)
	}
}
