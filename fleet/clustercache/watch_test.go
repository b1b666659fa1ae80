package clustercache

import (
	"bufio"
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/fixture"
	"github.com/navarch-io/navarch/internal/localcluster"
)

// A watch outlives the Cluster's request timeout: with a 2-second timeout, the one watch of
// a kind stays open for 7 seconds without ending once (the API server's own counters), and
// still delivers a new managed object.
func TestWatchesOutliveTheRequestTimeout(t *testing.T) {
	api := localcluster.StartForTest(t, localcluster.Options{Name: "watches"})
	dyn := dynamic.NewForConfigOrDie(api.RESTConfig())
	establishWidgetCRD(t, dyn)
	r := connectCluster(t, New(t.Context(), Options{Timeout: 2 * time.Second, Handler: idle}), "watches", api.Kubeconfig())
	m, err := r.Mapping(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Live(t.Context(), m, "default", "w"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(7 * time.Second)
	metrics := widgetWatchMetrics(t, api)
	if metrics.open != 1 || metrics.ended != 0 {
		t.Errorf("after 7 s with a 2 s request timeout: %d watches of widgets open and %d ended, want 1 and 0", metrics.open, metrics.ended)
	}

	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "default", "labels": map[string]any{LabelManaged: "true"}},
	}}
	if _, err := dyn.Resource(m.Resource).Namespace("default").Create(t.Context(), widget, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.WaitFor(t, "the watch to deliver the new Widget", func() bool {
		live, err := r.Live(t.Context(), m, "default", "w")
		return err == nil && live != nil
	})
	if err := dyn.Resource(m.Resource).Namespace("default").Delete(t.Context(), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.WaitFor(t, "the watch to deliver the Widget's deletion", func() bool {
		live, err := r.Live(t.Context(), m, "default", "w")
		return err == nil && live == nil
	})
}

// A watch keeps what its reflector hands over and queues the Application of each object that
// appears, changes or goes: an event, or a list that differs from the last. A relist of
// unchanged objects queues nothing.
func TestAWatchQueuesTheApplicationsOfWhatChanged(t *testing.T) {
	var queued []string
	w := &watch{objects: map[objectKey]cachedObject{}, synced: make(chan struct{}), onEvent: func(o *cachedObject) {
		queued = append(queued, o.app().Name+"@"+o.resourceVersion())
	}}
	object := func(name, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("shop")
		u.SetName(name)
		u.SetResourceVersion(rv)
		u.SetAnnotations(map[string]string{navarchv1.AnnotationTrackingID: TrackingID(types.NamespacedName{Namespace: "apps", Name: name}, u)})
		return u
	}
	step := func(what string, do func() error, want ...string) {
		t.Helper()
		queued = nil
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		slices.Sort(queued)
		if !slices.Equal(queued, want) {
			t.Errorf("%s queued %q, want %q", what, queued, want)
		}
	}
	cached := func(name string) string {
		o, ok := w.get("shop", name)
		if !ok {
			return ""
		}
		return o.resourceVersion()
	}

	step("the first list", func() error { return w.Replace([]any{object("a", "1"), object("b", "1")}, "1") }, "a@1", "b@1")
	select {
	case <-w.synced:
	default:
		t.Error("the first list did not mark the watch synced")
	}
	step("a relist of the same objects", func() error { return w.Replace([]any{object("a", "1"), object("b", "1")}, "2") })
	step("a relist where b changed and c appeared", func() error {
		return w.Replace([]any{object("a", "1"), object("b", "2"), object("c", "1")}, "3")
	}, "b@2", "c@1")
	step("a relist without a", func() error { return w.Replace([]any{object("b", "2"), object("c", "1")}, "4") }, "a@1")
	step("an added object", func() error { return w.Add(object("d", "1")) }, "d@1")
	step("an updated object", func() error { return w.Update(object("d", "2")) }, "d@2")
	step("a deleted object", func() error { return w.Delete(object("d", "3")) }, "d@2")
	step("an object deleted before the cache saw it", func() error { return w.Delete(object("e", "1")) }, "e@1")
	for name, want := range map[string]string{"a": "", "b": "2", "c": "1", "d": "", "e": ""} {
		if got := cached(name); got != want {
			t.Errorf("cached resourceVersion of %s: %q, want %q", name, got, want)
		}
	}
}

// watchMetrics are the API server's counts of the watch requests of widgets: open now, and
// ended since it started.
type watchMetrics struct{ open, ended int }

func widgetWatchMetrics(t *testing.T, api *localcluster.Cluster) watchMetrics {
	t.Helper()
	raw, err := kubernetes.NewForConfigOrDie(api.RESTConfig()).RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var m watchMetrics
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `resource="widgets"`) || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		value, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		switch {
		case strings.HasPrefix(line, "apiserver_longrunning_requests{"):
			m.open += int(value)
		case strings.HasPrefix(line, "apiserver_request_total{"):
			m.ended += int(value)
		}
	}
	return m
}
