package clustercache

import (
	"bufio"
	"bytes"
	"context"
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
	cache := New(t.Context(), Options{
		Timeout: 2 * time.Second,
		Handler: func(context.Context, *Remote, types.NamespacedName) (time.Duration, error) { return 0, nil },
	})
	r, err := cache.Connect(&navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "watches"}}, api.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
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
