package dashboard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// change is one watch event of the management cluster, as the event stream relays it. Old is
// nil for an addition, New nil for a deletion.
type change struct {
	Kind     string
	Old, New client.Object
}

// object is the changed object (the old one for a deletion).
func (c change) object() client.Object {
	if c.New != nil {
		return c.New
	}
	return c.Old
}

// store holds the navarch objects of the management cluster in informers, so that pages are
// rendered from memory, and fans their watch events out to the event streams.
type store struct {
	cache cache.Cache
	// direct reaches the API server with the same credentials, uncached.
	direct client.Client

	mu   sync.Mutex
	subs map[chan change]struct{}
	// seq counts the changes published. A render that reads it before listing shows at
	// least the state it counts; the pages' script drops a fragment older than what an
	// element already shows (a page fetch answered after a newer streamed cell).
	seq atomic.Uint64
}

// version is the number of changes the cache holds so far.
func (s *store) version() uint64 { return s.seq.Load() }

// watched are the kinds the store caches.
var watched = []struct {
	kind string
	obj  client.Object
	list client.ObjectList
}{
	{"Application", &navarchv1.Application{}, &navarchv1.ApplicationList{}},
	{"ApplicationSet", &navarchv1.ApplicationSet{}, &navarchv1.ApplicationSetList{}},
	{"Cluster", &navarchv1.Cluster{}, &navarchv1.ClusterList{}},
	{"Project", &navarchv1.Project{}, &navarchv1.ProjectList{}},
}

// syncTimeout bounds the first listing of the management cluster.
const syncTimeout = 2 * time.Minute

// newStore checks that cfg may list every watched kind (so that a missing permission is an
// error naming the kind, not a cache that never syncs), then starts the informers and waits
// for their first listing. namespace, when set, limits the namespaced kinds to it.
func newStore(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, namespace string) (*store, error) {
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("management cluster: %w", err)
	}
	for _, w := range watched {
		opts := []client.ListOption{client.Limit(1)}
		if namespace != "" && w.kind != "Cluster" {
			opts = append(opts, client.InNamespace(namespace))
		}
		if err := direct.List(ctx, w.list.DeepCopyObject().(client.ObjectList), opts...); err != nil {
			return nil, fmt.Errorf("list %ss in the management cluster: %w", w.kind, err)
		}
	}
	copts := cache.Options{Scheme: scheme, Mapper: direct.RESTMapper()}
	if namespace != "" {
		copts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
		copts.ByObject = map[client.Object]cache.ByObject{&navarchv1.Cluster{}: {}}
	}
	c, err := cache.New(cfg, copts)
	if err != nil {
		return nil, fmt.Errorf("management cluster cache: %w", err)
	}
	s := &store{cache: c, direct: direct, subs: map[chan change]struct{}{}}
	// Counting from the start time in microseconds keeps the numbers of a restarted dashboard
	// above those its open pages hold (and within a JavaScript number's exact integers).
	s.seq.Store(uint64(time.Now().UnixMicro()))
	for _, w := range watched {
		inf, err := c.GetInformer(ctx, w.obj)
		if err != nil {
			return nil, fmt.Errorf("watch %ss: %w", w.kind, err)
		}
		if _, err := inf.AddEventHandler(s.handler(w.kind)); err != nil {
			return nil, fmt.Errorf("watch %ss: %w", w.kind, err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		return nil, errors.New("the management cluster's Applications, ApplicationSets, Clusters and Projects were not listed within 2m")
	}
	return s, nil
}

// handler relays an informer's events. client-go updates the informer's store before it
// calls the handlers, so a subscriber that reads the cache on an event sees the new state.
func (s *store) handler(kind string) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(client.Object); ok {
				s.publish(change{Kind: kind, New: o})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(client.Object)
			n, ok2 := newObj.(client.Object)
			if ok1 && ok2 && o.GetResourceVersion() != n.GetResourceVersion() {
				s.publish(change{Kind: kind, Old: o, New: n})
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(client.Object); ok {
				s.publish(change{Kind: kind, Old: o})
			}
		},
	}
}

// subscriberBuffer is how many changes a slow event stream may lag behind; beyond it the
// stream is told to reload instead.
const subscriberBuffer = 512

func (s *store) subscribe() chan change {
	ch := make(chan change, subscriberBuffer)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	return ch
}

func (s *store) unsubscribe(ch chan change) {
	s.mu.Lock()
	delete(s.subs, ch)
	s.mu.Unlock()
}

// overflow is sent to a subscriber whose buffer is full: it has missed changes.
var overflow = change{Kind: "overflow"}

func (s *store) publish(c change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq.Add(1)
	for ch := range s.subs {
		select {
		case ch <- c:
		default:
			// Drop the oldest change to make room for the overflow marker.
			select {
			case <-ch:
			default:
			}
			select {
			case ch <- overflow:
			default:
			}
		}
	}
}

// applications lists the cached Applications, in every namespace or one. They are the
// cache's own objects: read them, never change them.
func (s *store) applications(ctx context.Context, namespace string) ([]*navarchv1.Application, error) {
	var list navarchv1.ApplicationList
	if err := s.cache.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Applications: %w", err)
	}
	out := make([]*navarchv1.Application, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (s *store) clusters(ctx context.Context) ([]navarchv1.Cluster, error) {
	var list navarchv1.ClusterList
	if err := s.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Clusters: %w", err)
	}
	return list.Items, nil
}

func (s *store) applicationSets(ctx context.Context, namespace string) ([]navarchv1.ApplicationSet, error) {
	var list navarchv1.ApplicationSetList
	if err := s.cache.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list ApplicationSets: %w", err)
	}
	return list.Items, nil
}

func (s *store) projects(ctx context.Context, namespace string) ([]navarchv1.Project, error) {
	var list navarchv1.ProjectList
	if err := s.cache.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Projects: %w", err)
	}
	return list.Items, nil
}

func (s *store) get(ctx context.Context, namespace, name string, obj client.Object) error {
	return s.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
}
