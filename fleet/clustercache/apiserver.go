package clustercache

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/navarch-io/navarch/internal/delta"
)

// apiserver is what navarch keeps of one apiserver as one identity sees it: clients,
// discovery, the REST mapper and the watches of managed objects. Clusters registered more than
// once (a Cluster per team or per environment on one apiserver, with the same credentials)
// share it, so each managed object is cached once and each of its events is decoded once and
// goes to the queue of the one Remote that syncs its Application, not to every Cluster of the
// apiserver. Remotes with different servers or credentials never share one: what a watch
// returns depends on who asks.
type apiserver struct {
	key       string
	dynamic   dynamic.Interface // requests, each bounded by the Cluster's timeout
	streams   dynamic.Interface // the watches' lists and streams, unbounded
	discovery discovery.DiscoveryInterface
	mapper    *mapper
	log       logr.Logger
	ctx       context.Context // ends when the last Remote using it stops
	cancel    context.CancelFunc
	users     int // Remotes using it; guarded by the Cache's mutex
	// slots holds one token per Application pass running on the apiserver, whichever of its
	// Remotes runs it (Options.APIServerWorkers).
	slots chan struct{}

	mu        sync.Mutex
	watches   map[schema.GroupVersionResource]*watch
	lastReset time.Time
	caps      *capabilities
	// routes holds, per Application, the route of its objects' events. One map rather than
	// a map of each: at 10,000 Applications, one is about 0.7 MB.
	routes map[types.NamespacedName]route
	// namespaces is the watch of the apiserver's namespaces once started (namespaceCache);
	// namespacesProbing while a list checks that it can be; namespacesRetry when to check
	// again after a failed list.
	namespaces        *namespaces
	namespacesProbing bool
	namespacesRetry   time.Time
}

func newAPIServer(parent context.Context, key string, cfg *rest.Config, log logr.Logger, workers int) (*apiserver, error) {
	cfg = uncompressed(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// The watches' client shares the connection but not the timeout of a request, which would
	// cut every watch stream after cfg.Timeout (30 seconds by default) and have the reflectors
	// open it again; the API server ends watches itself every 5 to 10 minutes, as the
	// reflectors ask.
	streams := rest.CopyConfig(cfg)
	streams.Timeout = 0
	watchClient, err := dynamic.NewForConfig(streams)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(parent)
	return &apiserver{
		key:       key,
		dynamic:   dyn,
		streams:   watchClient,
		discovery: disc,
		mapper:    newMapper(disc),
		log:       log.WithValues("server", cfg.Host),
		ctx:       ctx,
		cancel:    cancel,
		watches:   map[schema.GroupVersionResource]*watch{},
		routes:    map[types.NamespacedName]route{},
		slots:     make(chan struct{}, workers),
	}, nil
}

// uncompressed returns a copy of cfg that asks for responses without gzip. The API server
// compresses lists and watch streams when asked; each open watch then keeps a decompressor of
// about 40 KB (mostly its 32 KB window) for as long as it runs, three or more per cluster, and
// the API server spends CPU compressing every event. A response that is not streamed and
// under 128 KB is not compressed either way (an object read or written, a small list), so what
// this costs is bandwidth on large lists, such as the first list of each watched type.
func uncompressed(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = true
	return cfg
}

// apiserverKey identifies what a connection sees: its server and the identity it presents.
// A configuration with code in it (a dialer, a proxy function, a transport) cannot be
// compared, so it gets a key of its own (unique) and is never shared.
func apiserverKey(cfg *rest.Config, unique string) string {
	if cfg.Dial != nil || cfg.Proxy != nil || cfg.Transport != nil || cfg.WrapTransport != nil || cfg.AuthConfigPersister != nil {
		return "unique:" + unique
	}
	identity, err := json.Marshal(struct {
		Host, APIPath, Username, Password, BearerToken, BearerTokenFile string
		Impersonate                                                     rest.ImpersonationConfig
		TLS                                                             rest.TLSClientConfig
		AuthProvider, ExecProvider                                      any
		DisableCompression                                              bool
	}{
		cfg.Host, cfg.APIPath, cfg.Username, cfg.Password, cfg.BearerToken, cfg.BearerTokenFile,
		cfg.Impersonate, cfg.TLSClientConfig, cfg.AuthProvider, cfg.ExecProvider, cfg.DisableCompression,
	})
	if err != nil {
		return "unique:" + unique
	}
	return fmt.Sprintf("%x", sha256.Sum256(identity))
}

// route is where the events of an Application's objects go.
type route struct {
	// to is the Remote that queues them: the one that last queued the Application, which is
	// the one its destination names; nil once that Remote stopped.
	to *Remote
	// asked counts the events of the Application's objects and the times it was queued from
	// outside its workers (see Remote.Asked).
	asked uint64
}

// route records that r queues the events of app's objects.
func (a *apiserver) route(app types.NamespacedName, r *Remote) {
	a.mu.Lock()
	defer a.mu.Unlock()
	rt := a.routes[app]
	rt.to = r
	rt.asked++
	a.routes[app] = rt
}

// unroute forgets the routes to r, which stopped; the counts stay.
func (a *apiserver) unroute(r *Remote) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for app, rt := range a.routes {
		if rt.to == r {
			rt.to = nil
			a.routes[app] = rt
		}
	}
}

// forget forgets the route of app, which was deleted.
func (a *apiserver) forget(app types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.routes, app)
}

// watch returns the synced watch of gvr, starting it on first use.
func (a *apiserver) watch(ctx context.Context, gvr schema.GroupVersionResource) (*watch, error) {
	a.mu.Lock()
	w, ok := a.watches[gvr]
	if !ok {
		w = startWatch(a.ctx, gvr, a.streams.Resource(gvr), a.onEvent)
		a.watches[gvr] = w
		a.log.V(1).Info("Watching resource type", "resource", gvr.String())
	}
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case <-w.synced:
		return w, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the watch of %s: %w", gvr.String(), ctx.Err())
	}
}

// onEvent queues the Application that tracks the changed object on the Remote that syncs it.
// An object whose Application no Remote has queued is not this replica's to act on (or its
// Application is gone); once its Application is queued, that run reads the object anyway.
func (a *apiserver) onEvent(o *cachedObject) {
	if !o.tracked {
		return
	}
	a.mu.Lock()
	app := o.app()
	rt := a.routes[app]
	r := rt.to
	if r != nil {
		rt.asked++
		a.routes[app] = rt
	}
	a.mu.Unlock()
	if r != nil {
		r.queue.add(app)
	}
}

// cachedObject is a managed object as the watch caches keep it: what finds and routes it
// (its name, namespace, resourceVersion and the Application that tracks it) decoded, and the
// rest as JSON encoded against the first object of its resource type (see packer). Decoded
// into maps, an object takes two to three times the memory of its JSON, all of it pointers
// the garbage collector scans; the encoding is one pointer-free block of a fifth of that. Live
// decodes it again on each read, which costs microseconds and hands every caller its own copy.
//
// The names and the encoding share one block, which cachedObject points to with their
// lengths (see packer.compact), and the watch's map holds the 32 bytes of cachedObject itself:
// one allocation an object that outlives its event, the block, rather than six, which matters
// because the caches are written during a sync, among its garbage, and a page with one live
// object in it cannot be returned to the system.
type cachedObject struct {
	// data is the block: the encoding, then the parts (cachedPart), one after the other.
	data   *byte
	dict   *delta.Dictionary
	packed uint32            // the encoding's length
	lens   [partCount]uint16 // the parts' lengths
	// tracked says whether a tracking annotation or label names the object's Application.
	tracked bool
}

// cachedPart names a string that cachedObject keeps decoded.
type cachedPart int

const (
	partName cachedPart = iota
	partNamespace
	partResourceVersion
	partAppNamespace // of the Application that tracks the object
	partAppName
	partCount
)

// newCachedObject packs the encoding and the parts into one block.
func newCachedObject(packed []byte, dict *delta.Dictionary, parts [partCount]string, tracked bool) (*cachedObject, error) {
	if len(packed) > math.MaxUint32 {
		return nil, fmt.Errorf("%s/%s: %d bytes are too many to cache", parts[partNamespace], parts[partName], len(packed))
	}
	o := &cachedObject{dict: dict, packed: uint32(len(packed)), tracked: tracked}
	size := len(packed)
	for i, p := range parts {
		if len(p) > math.MaxUint16 {
			return nil, fmt.Errorf("%s/%s: a name of %d bytes is too long to cache", parts[partNamespace], parts[partName], len(p))
		}
		o.lens[i] = uint16(len(p))
		size += len(p)
	}
	if size == 0 {
		return o, nil
	}
	block := append(make([]byte, 0, size), packed...)
	for _, p := range parts {
		block = append(block, p...)
	}
	o.data = unsafe.SliceData(block)
	return o, nil
}

// encoding returns the object's encoded JSON, which no one may change.
func (o *cachedObject) encoding() []byte {
	if o.data == nil {
		return nil
	}
	return unsafe.Slice(o.data, o.packed)
}

// part returns one of the object's strings.
func (o *cachedObject) part(p cachedPart) string {
	n := int(o.lens[p])
	if n == 0 {
		return ""
	}
	start := int(o.packed)
	for _, l := range o.lens[:p] {
		start += int(l)
	}
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(o.data), start)), n)
}

func (o *cachedObject) name() string            { return o.part(partName) }
func (o *cachedObject) namespace() string       { return o.part(partNamespace) }
func (o *cachedObject) resourceVersion() string { return o.part(partResourceVersion) }

// app is the Application that tracks the object, if tracked.
func (o *cachedObject) app() types.NamespacedName {
	return types.NamespacedName{Namespace: o.part(partAppNamespace), Name: o.part(partAppName)}
}

// GetObjectMeta gives the reflector's key function what it reads: a streamed list's objects
// are kept by key until the list ends.
func (o *cachedObject) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: o.name(), Namespace: o.namespace(), ResourceVersion: o.resourceVersion()}
}

// object decodes the cached object.
func (o *cachedObject) object() (*unstructured.Unstructured, error) {
	raw, err := o.dict.Decode(o.encoding())
	if err != nil {
		return nil, fmt.Errorf("unpack the cached %s/%s: %w", o.namespace(), o.name(), err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode the cached %s/%s: %w", o.namespace(), o.name(), err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// packer is the transform of one resource type's watch cache. The first object it keeps
// becomes the reference the JSON of the others is encoded against (internal/delta): objects
// of one type share their keys and most values, and differ in names, uids, resourceVersions
// and timestamps, so a Service of 630 bytes of JSON keeps about 120.
type packer struct {
	ref delta.Reference
}

// compact drops what navarch never reads in the watch caches: managedFields (most of an
// object's size; navarch reads them only with a direct GET) and kubectl's
// last-applied-configuration (a second copy of the object, which the diff ignores), and keeps
// the rest as a cachedObject. An object it already compacted passes through unchanged.
func (p *packer) compact(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	if ann := u.GetAnnotations(); ann != nil {
		if _, ok := ann[lastApplied]; ok {
			delete(ann, lastApplied)
			u.SetAnnotations(ann)
		}
	}
	encoded, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s/%s for the cache: %w", u.GetNamespace(), u.GetName(), err)
	}
	dict := p.ref.For(encoded)
	packed := dict.Append(make([]byte, 0, len(encoded)/2), encoded)
	app, tracked := TrackedBy(u)
	return newCachedObject(packed, dict, [partCount]string{
		partName: u.GetName(), partNamespace: u.GetNamespace(), partResourceVersion: u.GetResourceVersion(),
		partAppNamespace: app.Namespace, partAppName: app.Name,
	}, tracked)
}

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
