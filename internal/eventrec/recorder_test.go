package eventrec

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/navarch-io/navarch/internal/scheme"
	"github.com/navarch-io/navarch/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Name: "eventrec"}, &env))
}

// clock is a settable time for the Recorder under test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// start runs a Recorder against the management apiserver until the test ends, with its time
// on c and its log in logs.
func start(t *testing.T, c *clock, logs *testenv.LogRecorder) *Recorder {
	t.Helper()
	cs, err := eventsclient.NewForConfig(env.Management.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := New(cs, scheme.New(), "navarch", logs.Wrap(env.Logger))
	r.now = c.now
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return r
}

// configMap creates a ConfigMap in ns for Events to regard.
func configMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

// eventsAbout lists the Events in ns regarding the object named name, by reason and note.
func eventsAbout(t *testing.T, ns, name string) map[string]eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]eventsv1.Event{}
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out[e.Reason+": "+e.Note] = e
		}
	}
	return out
}

// seriesCount is an Event's count: 1 without a series.
func seriesCount(e eventsv1.Event) int32 {
	if e.Series == nil {
		return 1
	}
	return e.Series.Count
}

// waitForEvents waits until the Events regarding name are want (reason and note → count).
func waitForEvents(t *testing.T, ns, name string, want map[string]int32) map[string]eventsv1.Event {
	t.Helper()
	var got map[string]eventsv1.Event
	testenv.Eventually(t, fmt.Sprintf("the Events %v about %s", want, name), func() string {
		got = eventsAbout(t, ns, name)
		counts := map[string]int32{}
		for k, e := range got {
			counts[k] = seriesCount(e)
		}
		if fmt.Sprint(counts) != fmt.Sprint(want) {
			return fmt.Sprintf("Events %v", counts)
		}
		return ""
	})
	return got
}

func TestAnEventSaysWhatHappenedToWhatAndWho(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c := &clock{t: time.Now()}
	r := start(t, c, &testenv.LogRecorder{})
	cm := configMap(t, ns, "app")
	other := configMap(t, ns, "other")

	r.Eventf(cm, other, corev1.EventTypeWarning, "SyncFailed", "Sync", "%d of %d objects failed: %s", 1, 3, "Secret db: forbidden")
	got := waitForEvents(t, ns, "app", map[string]int32{"SyncFailed: 1 of 3 objects failed: Secret db: forbidden": 1})
	e := got["SyncFailed: 1 of 3 objects failed: Secret db: forbidden"]
	host, _ := os.Hostname()
	for what, pair := range map[string][2]string{
		"type":                 {e.Type, corev1.EventTypeWarning},
		"action":               {e.Action, "Sync"},
		"reporting controller": {e.ReportingController, "navarch"},
		"reporting instance":   {e.ReportingInstance, "navarch-" + host},
		"regarding":            {fmt.Sprint(e.Regarding.Kind, " ", e.Regarding.Namespace, "/", e.Regarding.Name, " ", e.Regarding.UID), fmt.Sprint("ConfigMap ", ns, "/app ", cm.UID)},
		"related":              {fmt.Sprint(e.Related != nil && e.Related.Name == "other" && e.Related.UID == other.UID), "true"},
		"time":                 {e.EventTime.UTC().Format(time.RFC3339), c.now().UTC().Format(time.RFC3339)},
	} {
		if pair[0] != pair[1] {
			t.Errorf("the Event's %s: %q; want %q", what, pair[0], pair[1])
		}
	}

	// kubectl describe reads the same Event through the core API.
	var core corev1.EventList
	if err := env.Client.List(context.Background(), &core, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(core.Items) != 1 || core.Items[0].InvolvedObject.Name != "app" || core.Items[0].Message != e.Note || core.Items[0].Reason != "SyncFailed" {
		t.Errorf("the core API's Events: %+v; want the one Event, with its note as the message", core.Items)
	}

	// A note beyond the API's 1 KB is cut, on a character boundary, rather than refused.
	long := strings.Repeat("é", 600) // 1,200 bytes
	r.Eventf(cm, nil, corev1.EventTypeNormal, "Long", "Sync", "%s", long)
	waitForEvents(t, ns, "app", map[string]int32{
		"SyncFailed: 1 of 3 objects failed: Secret db: forbidden": 1,
		"Long: " + strings.Repeat("é", 512):                       1,
	})
}

func TestARepeatCountsIntoTheEventWithinTheWindow(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c := &clock{t: time.Now()}
	r := start(t, c, &testenv.LogRecorder{})
	cm := configMap(t, ns, "app")

	for range 3 {
		r.Eventf(cm, nil, corev1.EventTypeWarning, "SyncFailed", "Sync", "connection refused")
		c.advance(time.Minute)
	}
	// Another note, reason or type is another Event.
	r.Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced to abc1234")
	r.Eventf(cm, nil, corev1.EventTypeWarning, "SyncFailed", "Sync", "timeout")
	got := waitForEvents(t, ns, "app", map[string]int32{
		"SyncFailed: connection refused": 3,
		"Synced: synced to abc1234":      1,
		"SyncFailed: timeout":            1,
	})
	if s := got["SyncFailed: connection refused"].Series; s == nil || !s.LastObservedTime.Time.Equal(c.now().Add(-time.Minute).Truncate(time.Microsecond)) {
		t.Errorf("the repeated Event's series: %+v; want its last time %s", s, c.now().Add(-time.Minute))
	}

	// Past the window, the repeat is a new Event, and the old series is forgotten.
	c.advance(SeriesWindow)
	r.Eventf(cm, nil, corev1.EventTypeWarning, "SyncFailed", "Sync", "connection refused")
	testenv.Eventually(t, "a second Event for the repeat past the window", func() string {
		n := 0
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if e.Note == "connection refused" {
				n++
			}
		}
		if n != 2 {
			return fmt.Sprintf("%d Events say connection refused", n)
		}
		return ""
	})
}

func TestARepeatOfADeletedEventIsWrittenAnew(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c := &clock{t: time.Now()}
	r := start(t, c, &testenv.LogRecorder{})
	cm := configMap(t, ns, "app")

	r.Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced")
	got := waitForEvents(t, ns, "app", map[string]int32{"Synced: synced": 1})
	first := got["Synced: synced"]
	if err := env.Client.Delete(context.Background(), &first); err != nil {
		t.Fatal(err)
	}
	c.advance(time.Second)
	r.Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced")
	got = waitForEvents(t, ns, "app", map[string]int32{"Synced: synced": 1})
	if got["Synced: synced"].Name == first.Name {
		t.Errorf("the repeat of a deleted Event: %s again; want a new Event", first.Name)
	}
}

func TestEventsAboutClusterScopedObjectsGoToDefault(t *testing.T) {
	c := &clock{t: time.Now()}
	r := start(t, c, &testenv.LogRecorder{})
	name := testenv.Name(t)
	cr := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	r.Eventf(cr, nil, corev1.EventTypeNormal, "Seen", "Watch", "namespace %s", name)
	waitForEvents(t, metav1.NamespaceDefault, name, map[string]int32{"Seen: namespace " + name: 1})
}

func TestRecordingWaitsBrieflyAndSaysWhatItDrops(t *testing.T) {
	cs, err := eventsclient.NewForConfig(env.Management.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.LogRecorder{}
	r := New(cs, scheme.New(), "navarch", logs.Wrap(env.Logger)) // not started: nothing drains it
	r.queueWait = 100 * time.Millisecond
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "app"}}

	done := make(chan struct{})
	go func() {
		defer close(done)
		// The Events about one object go to one writer: its share of the queue, and 5 more.
		for i := range queueLength/writers + 5 {
			r.Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Sync", "event %d", i)
		}
	}()
	began := time.Now()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Eventf blocked on a full queue")
	}
	// Each of the 5 waited for room, then gave up.
	if took := time.Since(began); took < 5*r.queueWait {
		t.Errorf("the 5 Events with no room were dropped after %s; want each after waiting %s", took, r.queueWait)
	}
	if n := r.waiting(); n != queueLength/writers {
		t.Errorf("%d Events queued; want the writer's share of the queue, %d", n, queueLength/writers)
	}
	// The first drop is logged at once; the others are counted and reported at the next sweep,
	// and a sweep without drops ends the spell.
	if n := len(logs.Lines("Dropped an Event: the management apiserver is behind on writing them", "regarding", "ConfigMap x/app")); n != 1 {
		t.Errorf("%d drops logged one by one; want the first only", n)
	}
	r.reportDrops()
	if n := len(logs.Lines("Dropped Events: the management apiserver is behind on writing them", "dropped", "4")); n != 1 {
		t.Errorf("%d reports of the 4 further drops; want 1", n)
	}
	r.reportDrops() // no drops since: the spell ends
	r.Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Sync", "after the spell")
	if n := len(logs.Lines("Dropped an Event: the management apiserver is behind on writing them", "regarding", "ConfigMap x/app")); n != 2 {
		t.Errorf("the first drop of a new spell was not logged at once (%d lines)", n)
	}

	// An Event of no known type is refused, not written.
	r2 := New(cs, scheme.New(), "navarch", logr.Discard())
	r2.Eventf(cm, nil, "Error", "Synced", "Sync", "x")
	if n := r2.waiting(); n != 0 {
		t.Errorf("an Event of type Error was queued")
	}
}

func TestTheSeriesOfPastWindowsAreForgotten(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c := &clock{t: time.Now()}
	cs, err := eventsclient.NewForConfig(env.Management.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := New(cs, scheme.New(), "navarch", logr.Discard())
	r.now = c.now
	cm := configMap(t, ns, "app")
	ctx := context.Background()
	w := r.writers[0]
	for i := range 20 {
		ev, err := r.event(cm, nil, nil, corev1.EventTypeNormal, "Synced", "Sync", fmt.Sprintf("synced to %d", i))
		if err != nil {
			t.Fatal(err)
		}
		w.write(ctx, ev)
		c.advance(SeriesWindow / 10)
	}
	if len(w.series) != 20 {
		t.Fatalf("%d series remembered after 20 Events; want 20", len(w.series))
	}
	// The Events of the last 6 minutes (10 steps of 36 s, the one at the window's edge
	// included) are kept.
	w.forget()
	if len(w.series) != 10 {
		t.Errorf("%d series remembered after forgetting those past the window; want 10", len(w.series))
	}
}

func TestABurstOfEventsAboutManyObjectsIsWrittenWhole(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	logs := &testenv.LogRecorder{}
	c := &clock{t: time.Now()}
	r := start(t, c, logs)
	// As a fleet's sync records them: one Event about each of many Applications at once, more
	// than one writer's share of the queue holds.
	const objects = 1500
	used := map[*writer]bool{}
	for i := range objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%04d", i)}}
		r.Eventf(cm, nil, corev1.EventTypeNormal, "OperationSucceeded", "Sync", "synced")
		used[r.writerOf(&corev1.ObjectReference{Namespace: ns, Name: cm.Name})] = true
	}
	if len(used) != writers {
		t.Errorf("the Events about %d objects went to %d of the %d writers", objects, len(used), writers)
	}
	testenv.Eventually(t, "every Event of the burst written", func() string {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		if len(list.Items) != objects {
			return fmt.Sprintf("%d of %d Events written", len(list.Items), objects)
		}
		return ""
	})
	if n := len(logs.Lines("Dropped an Event: the management apiserver is behind on writing them", "reason", "OperationSucceeded")); n != 0 {
		t.Errorf("Events of the burst were dropped")
	}

	// Events about one object, more than its writer's queue holds: recording waits for room
	// as the writer takes them, and loses none.
	cm := configMap(t, ns, "busy")
	const many = queueLength/writers + 100
	for i := range many {
		c.advance(time.Microsecond) // an Event's name is its object's and its time's
		r.Eventf(cm, nil, corev1.EventTypeNormal, "OperationSucceeded", "Sync", "synced %d", i)
	}
	testenv.Eventually(t, "every Event about one object written", func() string {
		if n := len(eventsAbout(t, ns, "busy")); n != many {
			return fmt.Sprintf("%d of %d Events written", n, many)
		}
		return ""
	})
	if n := len(logs.Lines("Dropped an Event: the management apiserver is behind on writing them", "reason", "OperationSucceeded")); n != 0 {
		t.Errorf("Events about one object were dropped")
	}
}

func TestEventsLeftAtShutdownAreCountedOnce(t *testing.T) {
	// An apiserver that accepts connections and never answers: the writers hang on it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	}()
	cs, err := eventsclient.NewForConfig(&rest.Config{Host: "http://" + ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.LogRecorder{}
	r := New(cs, scheme.New(), "navarch", logs.Wrap(env.Logger))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Start(ctx) }()
	// Events about one object: one writer, which takes the first and hangs on it.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "app"}}
	for i := range 10 {
		r.Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Sync", "event %d", i)
	}
	cancel()
	stopped := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Start did not return within 30 s of its context's end")
	}
	if took := time.Since(stopped); took < drainTime {
		t.Errorf("Start returned %s after its context's end; want the drain's %s spent on the Event in flight", took, drainTime)
	}
	// The first Event, in flight or taken by the drain, is tried until the drain's time is up
	// (a request in flight is not abandoned when the manager stops); the other 9 are counted,
	// in one line for all the writers.
	if lines := logs.Lines("Dropped the Events still queued at shutdown", "count", "9"); len(lines) != 1 {
		t.Errorf("the drop at shutdown logged as %v; want one line counting 9", lines)
	}
}
