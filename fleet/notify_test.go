package fleet_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/notify"
	"github.com/navarch-io/navarch/internal/testenv"
)

// receiver is a real HTTP endpoint standing for a team's webhook or chat: it answers the
// first len(fail) requests with those statuses, then 200, and keeps every request.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	fail []int
	got  []delivered
}

type delivered struct {
	header http.Header
	body   []byte
	status int
}

func newReceiver(t *testing.T, fail ...int) *receiver {
	r := &receiver{fail: fail}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := http.StatusOK
		if len(r.fail) > 0 {
			status, r.fail = r.fail[0], r.fail[1:]
		}
		r.got = append(r.got, delivered{req.Header.Clone(), body, status})
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

// accepted returns the bodies answered 200, decoded, oldest first.
func (r *receiver) accepted(t *testing.T) []notify.Message {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []notify.Message
	for _, d := range r.got {
		if d.status != http.StatusOK {
			continue
		}
		var m notify.Message
		if err := json.Unmarshal(d.body, &m); err != nil {
			t.Fatalf("a body that is not a JSON message: %s", d.body)
		}
		out = append(out, m)
	}
	return out
}

func (r *receiver) requests() []delivered {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivered(nil), r.got...)
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
	hook, chat := newReceiver(t), newReceiver(t)
	flaky := newReceiver(t, http.StatusInternalServerError, http.StatusInternalServerError)
	dead := newReceiver(t, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500)
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
			if got := triggersOf(hook.accepted(t)); got != want {
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
		if got := triggersOf(hook.accepted(t)); got != want {
			wrong = append(wrong, fmt.Sprintf("hook received %q, want %q", got, want))
		}
		flakyGot := hook.accepted(t)[:0:0]
		flakyGot = append(flakyGot, flaky.accepted(t)...)
		slices.SortFunc(flakyGot, func(a, b notify.Message) int { return strings.Compare(string(a.Trigger), string(b.Trigger)) })
		if got := triggersOf(flakyGot); got != wantSorted {
			wrong = append(wrong, fmt.Sprintf("flaky received %q, want %q in any order", got, wantSorted))
		}
		if got := len(chat.requests()); got != 3 {
			wrong = append(wrong, fmt.Sprintf("chat received %d messages, want 3", got))
		}
		return strings.Join(wrong, "; ")
	}
	testenv.Eventually(t, "every destination received each message", allDelivered)
	testenv.Consistently(t, 3*time.Second, "one message per transition at every destination", allDelivered)

	// Signed with the key of the Secret, over the exact body; one delivery id per message.
	ids := map[string]bool{}
	for _, d := range hook.requests() {
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write(d.body)
		if got, want := d.header.Get("X-Navarch-Signature"), "sha256="+hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(got), []byte(want)) {
			t.Errorf("X-Navarch-Signature %q does not verify with the key of the Secret (want %q)", got, want)
		}
		ids[d.header.Get("X-Navarch-Delivery")] = true
	}
	if len(ids) != 3 || ids[""] {
		t.Errorf("delivery ids %v, want 3 distinct ids", ids)
	}
	msgs := hook.accepted(t)
	if m := msgs[1]; m.Severity != "warning" || m.Subscription != "team" || m.Application.Namespace != ns || m.Application.Project != "default" ||
		m.Application.Sync != navarchv1.SyncStatusOutOfSync || len(m.Application.Revision) != 40 || m.Application.Destination != "east/"+ns+"-web" {
		t.Errorf("the OutOfSync message is %+v %+v", m, m.Application)
	}
	if op := msgs[2].Application.Operation; op == nil || op.Phase != navarchv1.OperationSucceeded || op.InitiatedBy != "test" {
		t.Errorf("the SyncSucceeded message has operation %+v", op)
	}

	// The chat got Slack's shape: one text field, readable.
	var slack map[string]any
	if err := json.Unmarshal(chat.requests()[1].body, &slack); err != nil {
		t.Fatal(err)
	}
	if text, _ := slack["text"].(string); len(slack) != 1 || !strings.Contains(text, "*OutOfSync* Application "+ns+"/web is OutOfSync with ") {
		t.Errorf("the chat received %v", slack)
	}

	// The flaky endpoint answered 500 twice: the messages it refused came with a later
	// attempt, under the same delivery id, and the errors are counted and logged.
	reqs := flaky.requests()
	acceptedIDs := map[string]int{}
	for _, d := range reqs {
		if d.status == http.StatusOK {
			acceptedIDs[d.header.Get("X-Navarch-Delivery")]++
		}
	}
	for _, d := range reqs {
		if id := d.header.Get("X-Navarch-Delivery"); acceptedIDs[id] != 1 {
			t.Errorf("delivery %q (answered %d) was accepted %d times at flaky, want once", id, d.status, acceptedIDs[id])
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
	for _, m := range hook.accepted(t) {
		if m.Application.Name == other.Name {
			t.Errorf("a message about %s, which the selector excludes", other.Name)
		}
	}
}

// Two failed sync operations are two messages; one failed operation seen again and again is
// one.
func TestNotificationsSyncFailedOncePerOperation(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	hook := newReceiver(t)
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
			if got := len(hook.accepted(t)); got != i+1 {
				return fmt.Sprintf("%d messages", got)
			}
			return ""
		})
		refresh(t, broken)
	}
	testenv.Consistently(t, 3*time.Second, "two failed operations, two messages", func() string {
		if got := triggersOf(hook.accepted(t)); got != "SyncFailed broken, SyncFailed broken" {
			return "received " + got
		}
		return ""
	})
	for _, m := range hook.accepted(t) {
		if !strings.Contains(m.Summary, "Sprocket") || m.Application.Operation.Phase != navarchv1.OperationFailed {
			t.Errorf("a SyncFailed message that does not say why: %q", m.Summary)
		}
	}
}

// A configuration mistake is an Event on the ConfigMap naming the field and a metric, and
// changes nothing else; fixing it takes effect without a restart.
func TestNotificationsInvalidConfigIsReportedOnTheConfigMap(t *testing.T) {
	ctx := context.Background()
	hook := newReceiver(t)
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
	for _, m := range metric(t, name, labels) {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

func gauge(t *testing.T, name string) float64 {
	t.Helper()
	m := metric(t, name, nil)
	if len(m) == 0 {
		return -1
	}
	return m[0].GetGauge().GetValue()
}
