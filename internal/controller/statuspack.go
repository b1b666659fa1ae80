package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sjson "sigs.k8s.io/json"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/delta"
)

// The manager's cache holds every Application for the controller's lifetime, and most of an
// Application's memory is the lists of its status: conditions, the resources inventory, the
// history, and the resources of the last sync's result. Readers seldom need them, and they
// differ little from one Application to the next, so the cache keeps them as their JSON
// encoded against the first Application's (internal/delta): about a hundred bytes instead of
// a kilobyte and a half of decoded structs.
//
// The rest of the status stays decoded (sync, health, the operation's phase, message, times
// and revision), so that the watches' predicates, the notifier's tracker and the
// ApplicationSet controller's rollouts read the cache's objects as they are.
//
// The encoding rides in the object's managedFields, which the cache drops anyway (see
// compactCached), as the only entry, of manager packedStatusManager. Reads through the
// manager's cache and client (statusCache) decode it back, so a reconciler gets the whole
// Application; an informer's event handler gets the object as cached, without the lists.

// packedStatusManager names the managedFields entry that holds the encoded status lists.
const packedStatusManager = "navarch.io/packed-status"

// statusLists are the parts of an Application's status the cache keeps encoded.
type statusLists struct {
	Conditions    []metav1.Condition          `json:"c,omitempty"`
	Resources     []navarchv1.ResourceStatus  `json:"r,omitempty"`
	History       []navarchv1.RevisionHistory `json:"h,omitempty"`
	SyncResources []navarchv1.ResourceResult  `json:"s,omitempty"`
}

// statusPacker encodes and decodes the status lists of one manager's cached Applications.
type statusPacker struct {
	ref delta.Reference
}

// pack moves the status lists of app, which the cache's transform owns, into their
// encoding, in app's managedFields (stripped before). An Application with no lists is left as
// it is.
func (p *statusPacker) pack(app *navarchv1.Application) error {
	st := &app.Status
	lists := statusLists{Conditions: st.Conditions, Resources: st.Resources, History: st.History}
	if op := st.OperationState; op != nil && op.SyncResult != nil {
		lists.SyncResources = op.SyncResult.Resources
	}
	if len(lists.Conditions)+len(lists.Resources)+len(lists.History)+len(lists.SyncResources) == 0 {
		return nil
	}
	raw, err := json.Marshal(lists)
	if err != nil {
		return fmt.Errorf("encode the status of %s/%s for the cache: %w", app.Namespace, app.Name, err)
	}
	var scratch [512]byte
	app.ManagedFields = packedEntries(p.ref.For(raw).Append(scratch[:0], raw))
	st.Conditions, st.Resources, st.History = nil, nil, nil
	if lists.SyncResources != nil {
		st.OperationState.SyncResult.Resources = nil
	}
	return nil
}

// packedStatus is one allocation holding what a cached Application keeps of its status lists:
// the managedFields entry, its FieldsV1 and, when it fits in A (a byte array), the encoding.
// Each update of an Application is decoded and packed anew, among the garbage of the work that
// caused it, and the cache keeps the last: its allocations stay, each keeping a page of its size
// class in use. One allocation instead of three (a 96-byte entry, a 24-byte FieldsV1, the
// encoding) keeps fewer such pages; at 10,000 Applications the fleet benchmark's heap held
// 10,000 of each of the first two in pages at most half full.
type packedStatus[A any] struct {
	entry  [1]metav1.ManagedFieldsEntry
	fields metav1.FieldsV1
	raw    A
}

// packedEntries returns the managedFields of a cached Application whose status lists are
// encoded as enc, in one allocation of a size class it fills when enc fits in one of up to
// 512 bytes (the array sizes make the whole 160, 192, 224, 256, 320, 384 or 512 bytes).
func packedEntries(enc []byte) []metav1.ManagedFieldsEntry {
	for _, p := range statusPackers {
		if len(enc) <= p.room {
			return p.pack(enc)
		}
	}
	return newPackedStatus[[0]byte](enc) // the encoding in an allocation of its own
}

// sizedPacker packs into a packedStatus[A] whose array has room bytes.
type sizedPacker struct {
	room int
	pack func(enc []byte) []metav1.ManagedFieldsEntry
}

func packerOf[A any]() sizedPacker {
	var a A
	return sizedPacker{room: int(unsafe.Sizeof(a)), pack: newPackedStatus[A]}
}

// statusPackers, smallest first.
var statusPackers = []sizedPacker{
	packerOf[[40]byte](), packerOf[[72]byte](), packerOf[[104]byte](), packerOf[[136]byte](),
	packerOf[[200]byte](), packerOf[[264]byte](), packerOf[[392]byte](),
}

func newPackedStatus[A any](enc []byte) []metav1.ManagedFieldsEntry {
	p := new(packedStatus[A])
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&p.raw)), unsafe.Sizeof(p.raw))
	if len(enc) > len(raw) {
		raw = make([]byte, len(enc))
	}
	n := copy(raw, enc)
	p.fields.Raw = raw[:n:n] //nolint:staticcheck // SetRawBytes would copy the encoding out of this allocation
	p.entry[0] = metav1.ManagedFieldsEntry{Manager: packedStatusManager, FieldsV1: &p.fields}
	return p.entry[:]
}

// unpack gives app, a copy of a cached Application, its status lists back and drops their
// encoding. The copy may share its pointers with the cached object (a read without deep copy),
// so unpack replaces what it changes instead of writing through them.
func (p *statusPacker) unpack(app *navarchv1.Application) error {
	packed := packedLists(app)
	if packed == nil {
		return nil
	}
	dict := p.ref.Dictionary()
	if dict == nil {
		return fmt.Errorf("the cached status of %s/%s is encoded, but this cache encoded none", app.Namespace, app.Name)
	}
	raw, err := dict.Decode(packed)
	if err != nil {
		return fmt.Errorf("unpack the cached status of %s/%s: %w", app.Namespace, app.Name, err)
	}
	var lists statusLists
	if err := sjson.UnmarshalCaseSensitivePreserveInts(raw, &lists); err != nil {
		return fmt.Errorf("decode the cached status of %s/%s: %w", app.Namespace, app.Name, err)
	}
	app.ManagedFields = nil
	st := &app.Status
	st.Conditions, st.Resources, st.History = lists.Conditions, lists.Resources, lists.History
	if lists.SyncResources != nil && st.OperationState != nil && st.OperationState.SyncResult != nil {
		op := *st.OperationState
		result := *op.SyncResult
		result.Resources = lists.SyncResources
		op.SyncResult = &result
		st.OperationState = &op
	}
	return nil
}

// unpacked returns app whole: app itself when its lists are not packed, a copy otherwise.
// app is left as it is.
func (p *statusPacker) unpacked(app *navarchv1.Application) (*navarchv1.Application, error) {
	if packedLists(app) == nil {
		return app, nil
	}
	c := *app
	if err := p.unpack(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

func packedLists(app *navarchv1.Application) []byte {
	if len(app.ManagedFields) != 1 {
		return nil
	}
	e := app.ManagedFields[0]
	if e.Manager != packedStatusManager || e.FieldsV1 == nil {
		return nil
	}
	return e.FieldsV1.GetRawBytes()
}

// withoutStatusLists is a read option of statusCache: the caller reads no status lists
// (conditions, resources, history, the resources of the sync result), which stay out of the
// Applications it gets, sparing their decoding. For the readers of many Applications at once
// that need their spec, sync, health or operation only.
type withoutStatusLists struct{}

func (withoutStatusLists) ApplyToList(*client.ListOptions) {}
func (withoutStatusLists) ApplyToGet(*client.GetOptions)   {}

// takeWithoutStatusLists reports whether opts hold withoutStatusLists, and returns them
// without it, in a new slice: the caller's stays as it was.
func takeWithoutStatusLists[O any](opts []O) ([]O, bool) {
	is := func(o O) bool { _, ok := any(o).(withoutStatusLists); return ok }
	if !slices.ContainsFunc(opts, is) {
		return opts, false
	}
	if n := len(opts); is(opts[n-1]) && !slices.ContainsFunc(opts[:n-1], is) {
		return opts[: n-1 : n-1], true // the usual place, last: no copy
	}
	return slices.DeleteFunc(slices.Clone(opts), is), true
}

// statusCache is the manager's cache, which hands out Applications whole (see statusPacker).
type statusCache struct {
	cache.Cache
	packer *statusPacker
}

// newStatusCache returns the manager's NewCache function.
func newStatusCache(packer *statusPacker) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := cache.New(cfg, opts)
		if err != nil {
			return nil, err
		}
		return statusCache{Cache: c, packer: packer}, nil
	}
}

func (c statusCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	opts, skip := takeWithoutStatusLists(opts)
	if err := c.Cache.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if app, ok := obj.(*navarchv1.Application); ok {
		return c.finish(app, skip)
	}
	return nil
}

func (c statusCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	opts, skip := takeWithoutStatusLists(opts)
	if err := c.Cache.List(ctx, list, opts...); err != nil {
		return err
	}
	if apps, ok := list.(*navarchv1.ApplicationList); ok {
		for i := range apps.Items {
			if err := c.finish(&apps.Items[i], skip); err != nil {
				return err
			}
		}
	}
	return nil
}

// finish makes app, as the cache gave it, what the reader asked for.
func (c statusCache) finish(app *navarchv1.Application, skip bool) error {
	if skip {
		if packedLists(app) != nil {
			app.ManagedFields = nil
		}
		return nil
	}
	return c.packer.unpack(app)
}
