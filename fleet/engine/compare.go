package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/fleet/diff"
	"github.com/navarch-io/navarch/fleet/health"
)

// resource is one object of an Application: desired (from Git), live (from the cluster), or
// both.
type resource struct {
	ref        navarchv1.ResourceRef
	gvk        schema.GroupVersionKind
	obj        *unstructured.Unstructured // desired, with namespace and tracking set; nil when only in the inventory
	live       *unstructured.Unstructured // from the watch cache (or a GET); nil when absent
	mapping    *meta.RESTMapping          // nil when the cluster does not serve the kind (yet)
	mappingErr error
	wave       int64
	options    syncOptions

	status           navarchv1.SyncStatusCode
	message          string
	dryRunErr        error // the server refused the desired object
	missingNamespace bool  // the object's namespace does not exist (yet)
	health           *navarchv1.HealthStatus
	prune            bool      // tracked and live, but no longer in Git
	sharedWith       string    // the other Application tracking the live object
	hook             *hookSpec // set for hooks
	compareError     string    // why the comparison failed, for the ComparisonError condition
	forbidden        error     // the Project does not allow creating or changing the object
}

func (r *resource) key() string {
	return r.gvk.Group + "/" + r.gvk.Kind + "/" + r.ref.Namespace + "/" + r.ref.Name
}

func refOf(obj *unstructured.Unstructured) navarchv1.ResourceRef {
	gvk := obj.GroupVersionKind()
	return navarchv1.ResourceRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// namespaceCheck looks each namespace up at most once per comparison: in the cluster's watch
// of its namespaces when it has one (Remote.NamespaceExists), which may lag the API server by
// an event, or with a GET. A failed lookup counts as existing: the dry run then tells what is
// wrong. live checks ask the API server, for decisions a lagging cache must not make (see
// operation.confirmNamespaces).
type namespaceCheck struct {
	remote *cluster
	live   bool
	mu     sync.Mutex
	known  map[string]bool
}

// namespaceCache is what a Cluster with a watch of its namespaces offers.
type namespaceCache interface {
	NamespaceExists(name string) (exists, known bool)
}

func (n *namespaceCheck) exists(ctx context.Context, name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ok, seen := n.known[name]; seen {
		return ok
	}
	exists, known := false, false
	if c, ok := n.remote.Cluster.(namespaceCache); ok && !n.live {
		exists, known = c.NamespaceExists(name)
	}
	if !known {
		exists = true
		if m, err := n.remote.Mapping(namespaceKind); err == nil {
			_, err := n.remote.Resource(m, "").Get(ctx, name, metav1.GetOptions{})
			exists = !apierrors.IsNotFound(err)
		}
	}
	if n.known == nil {
		n.known = map[string]bool{}
	}
	n.known[name] = exists
	return exists
}

// absent stands for the hash of a live object that does not exist, in dry-run cache keys.
const absent = "absent"

// compareConcurrency bounds the objects of one Application compared at once.
const compareConcurrency = 8

// comparison is the outcome of comparing an Application's desired objects with the cluster.
type comparison struct {
	commit    string       // the revision compared: a commit, or several sources' joined
	revisions []string     // the revision of each source, with spec.sources
	resources []*resource  // desired ones first, then ones to prune
	hooks     []*resource  // hooks, not compared
	ignore    *diff.Ignore // the Application's compiled ignoreDifferences
	sync      navarchv1.SyncStatusCode
	health    navarchv1.HealthStatus
	errors    []string // comparison problems for the ComparisonError condition
	shared    []string // objects tracked by another Application
	pol       *policy  // what the Application's Project allows
}

// dryRunCache remembers, per object, the outcome of the last server-side dry run, keyed by
// the hashes of the desired and the (normalised) live object and of the ignore rules. An
// unchanged Application therefore costs no dry runs, and status-only changes of live objects
// (a Deployment's rollout progress) do not invalidate it.
//
// It holds one entry per managed object and hook of the fleet for as long as the controller
// runs, so an entry is small and holds no pointer but to a result that differs: a 64-bit
// hash of the object's key, a 128-bit digest of the three hashes it was computed from, and
// the result, shared by every entry when it is the common "equal" or "absent". No string of
// its own is kept, which would be three or four small allocations an object, scattered over
// the heap among a sync's garbage. Two keys that share a hash only take each other's entry:
// the digest of the inputs still decides, so the cost is a dry run, never a wrong result.
type dryRunCache struct {
	mu      sync.Mutex
	entries map[uint64]dryRunEntry // by keyHash of the key
}

type dryRunEntry struct {
	inputs digest // of the desired, live and ignore hashes
	result *diff.Result
}

// digest is the first half of a SHA-256: with a few hundred thousand entries, a collision is
// less likely than one in 10²⁷.
type digest [16]byte

// digestOf hashes parts, each prefixed by its length, so that no two lists of parts share one.
func digestOf(parts ...string) digest {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		_, _ = h.Write(binary.AppendUvarint(n[:0], uint64(len(p))))
		_, _ = io.WriteString(h, p)
	}
	var sum [sha256.Size]byte
	var d digest
	copy(d[:], h.Sum(sum[:0]))
	return d
}

// keyHash is the first 64 bits of the key's digest: with a few hundred thousand entries, the
// chance that any two keys share one is below one in 10⁸.
func keyHash(key string) uint64 {
	d := digestOf(key)
	return binary.LittleEndian.Uint64(d[:8])
}

// The results most entries hold, shared.
var (
	resultEqual = diff.Result{Equal: true}
	resultZero  = diff.Result{}
)

func (c *dryRunCache) get(key, desired, live, ignore string) (diff.Result, bool) {
	k, inputs := keyHash(key), digestOf(desired, live, ignore)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || e.inputs != inputs {
		return diff.Result{}, false
	}
	r := *e.result
	r.Paths = slices.Clone(r.Paths) // the caller's own
	return r, true
}

func (c *dryRunCache) put(key, desired, live, ignore string, r diff.Result) {
	k, inputs := keyHash(key), digestOf(desired, live, ignore)
	var kept *diff.Result
	switch {
	case r.Equal && len(r.Paths) == 0 && !r.Truncated:
		kept = &resultEqual
	case !r.Equal && r.Paths == nil && !r.Truncated:
		kept = &resultZero
	default:
		own := r
		kept = &own
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[uint64]dryRunEntry{}
	}
	c.entries[k] = dryRunEntry{inputs: inputs, result: kept}
}

func (c *dryRunCache) forget(key string) {
	k := keyHash(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, k)
}

// prepare turns rendered objects into desired resources: namespace defaulted (or cleared for
// cluster-scoped kinds), tracking annotation and watch label set, mapping resolved.
//
// Hooks come back separately: sync operations run them, comparisons ignore them. Their
// tracking id is set when an operation names their instance.
func (e *Engine) prepare(app *navarchv1.Application, remote *cluster, objs []*unstructured.Unstructured, opts syncOptions) (desired, hooks []*resource, err error) {
	appKey := types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
	crdScopes := crdScopes(objs)
	seen := map[string]bool{}
	desired = make([]*resource, 0, len(objs))
	for _, src := range objs {
		var spec *hookSpec
		if isHook(src) {
			if spec = parseHook(src); len(spec.phases) == 0 {
				continue // Skip: never applied
			}
		}
		obj := src.DeepCopy()
		gvk := obj.GroupVersionKind()
		r := &resource{gvk: gvk, obj: obj}
		r.mapping, r.mappingErr = remote.Mapping(gvk)
		namespaced := obj.GetNamespace() != ""
		switch {
		case r.mapping != nil:
			namespaced = r.mapping.Scope.Name() == meta.RESTScopeNameNamespace
		case crdScopes[gvk.GroupKind()] != "":
			namespaced = crdScopes[gvk.GroupKind()] == "Namespaced"
		}
		if namespaced && obj.GetNamespace() == "" {
			obj.SetNamespace(app.Spec.Destination.Namespace)
			if obj.GetNamespace() == "" {
				obj.SetNamespace(metav1.NamespaceDefault)
			}
		}
		if !namespaced {
			obj.SetNamespace("")
		}
		r.ref = refOf(obj)
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[clustercache.LabelManaged] = "true"
		obj.SetLabels(labels)
		r.wave = waveOf(r)
		r.options = opts.withAnnotation(obj)
		if spec != nil {
			// A hook instance is marked as this Application's too, so that BeforeHookCreation
			// deletes only an instance of its own.
			setAnnotation(obj, navarchv1.AnnotationTrackingID, clustercache.TrackingID(appKey, obj))
			r.hook = spec
			hooks = append(hooks, r)
			continue
		}
		if seen[r.key()] {
			return nil, nil, fmt.Errorf("%s %s is rendered twice", gvk.Kind, objName(obj))
		}
		seen[r.key()] = true
		setAnnotation(obj, navarchv1.AnnotationTrackingID, clustercache.TrackingID(appKey, obj))
		desired = append(desired, r)
	}
	return desired, hooks, nil
}

func setAnnotation(obj *unstructured.Unstructured, key, value string) {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = value
	obj.SetAnnotations(annotations)
}

// inventory calls found for each object of the Application's inventory (status.resources,
// hooks excluded) that is still live and still tracked by it, with its live state, wave and
// sync options filled in. Objects whose kind is gone went with it; objects another
// Application tracks now are no longer this one's.
func (e *Engine) inventory(ctx context.Context, app *navarchv1.Application, remote *cluster, opts syncOptions, found func(*resource)) error {
	appKey := types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
	for _, inv := range app.Status.Resources {
		if inv.Hook {
			continue
		}
		r := &resource{gvk: schema.GroupVersionKind{Group: inv.Group, Version: inv.Version, Kind: inv.Kind}, ref: inv.ResourceRef}
		if r.mapping, r.mappingErr = remote.Mapping(r.gvk); r.mapping == nil {
			if r.mappingErr != nil && !meta.IsNoMatchError(r.mappingErr) {
				// Discovery failed (the cluster does not answer): the object may well exist,
				// so it must not be forgotten by prune or deletion.
				return fmt.Errorf("look up kind %s: %w", r.gvk.Kind, r.mappingErr)
			}
			continue // the cluster has no such kind any more: nothing of it is left
		}
		live, err := remote.Live(ctx, r.mapping, r.ref.Namespace, r.ref.Name)
		if err != nil {
			return err
		}
		if owner, ok := clustercache.TrackedBy(live); !ok || owner != appKey {
			continue
		}
		r.live = live
		r.wave = waveOf(r)
		r.options = opts.withAnnotation(live)
		found(r)
	}
	return nil
}

// crdScopes maps the kinds defined by CustomResourceDefinitions among objs to their scope.
func crdScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]string {
	out := map[schema.GroupKind]string{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" || o.GroupVersionKind().Group != "apiextensions.k8s.io" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		out[schema.GroupKind{Group: group, Kind: kind}] = scope
	}
	return out
}

func objName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// compare fills in the live state, sync status and health of every desired resource and
// adds the inventory's resources that are no longer desired.
func (e *Engine) compare(ctx context.Context, app *navarchv1.Application, remote *cluster, desired []*resource, ig *diff.Ignore, opts syncOptions) *comparison {
	appKey := types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
	c := &comparison{resources: desired, ignore: ig}
	ignoreHash := ignoreKey(app.Spec.IgnoreDifferences)
	desiredKeys := map[string]bool{}
	namespaces := &namespaceCheck{remote: remote}
	// Objects are compared concurrently: each comparison may wait for a dry run.
	var wg sync.WaitGroup
	limit := make(chan struct{}, compareConcurrency)
	for _, r := range desired {
		desiredKeys[r.key()] = true
		limit <- struct{}{}
		wg.Go(func() {
			defer func() { <-limit }()
			e.compareOne(ctx, appKey, remote, r, ig, ignoreHash, namespaces)
		})
	}
	wg.Wait()
	for _, r := range desired {
		if r.compareError != "" {
			c.errors = append(c.errors, r.compareError)
		}
		if r.sharedWith != "" {
			c.shared = append(c.shared, fmt.Sprintf("%s %s is also managed by Application %s", r.ref.Kind, objName(r.obj), r.sharedWith))
		}
	}
	err := e.inventory(ctx, app, remote, opts, func(r *resource) {
		if desiredKeys[r.key()] {
			return
		}
		r.prune, r.status = true, navarchv1.SyncStatusOutOfSync
		r.health = health.Assess(r.live)
		r.message = "no longer in Git"
		c.resources = append(c.resources, r)
	})
	if err != nil {
		c.errors = append(c.errors, err.Error())
		c.sync = navarchv1.SyncStatusUnknown
	}

	if c.sync == "" {
		c.sync = navarchv1.SyncStatusSynced
	}
	worst := navarchv1.HealthHealthy
	var healthMessage string
	for _, r := range c.resources {
		switch {
		case r.status == navarchv1.SyncStatusUnknown:
			c.sync = navarchv1.SyncStatusUnknown
		case r.status == navarchv1.SyncStatusOutOfSync && c.sync == navarchv1.SyncStatusSynced:
			c.sync = navarchv1.SyncStatusOutOfSync
		}
		if r.health != nil && r.health.Status != "" && health.Worse(r.health.Status, worst) {
			worst = r.health.Status
			healthMessage = fmt.Sprintf("%s %s: %s", r.ref.Kind, r.ref.Name, r.health.Message)
			if r.health.Message == "" {
				healthMessage = fmt.Sprintf("%s %s is %s", r.ref.Kind, r.ref.Name, r.health.Status)
			}
		}
	}
	c.health = navarchv1.HealthStatus{Status: worst, Message: healthMessage}
	return c
}

// compareOne compares one desired resource with the cluster.
func (e *Engine) compareOne(ctx context.Context, appKey types.NamespacedName, remote *cluster, r *resource, ig *diff.Ignore, ignoreHash string, namespaces *namespaceCheck) {
	r.status = navarchv1.SyncStatusOutOfSync
	if r.mapping == nil {
		r.message = fmt.Sprintf("the cluster does not serve kind %s (%s)", r.gvk.Kind, r.gvk.GroupVersion().String())
		r.health = &navarchv1.HealthStatus{Status: navarchv1.HealthMissing, Message: r.message}
		if r.mappingErr != nil && !meta.IsNoMatchError(r.mappingErr) {
			r.status = navarchv1.SyncStatusUnknown
			r.message = r.mappingErr.Error()
			r.compareError = r.message
		}
		return
	}
	unknown := func(err error) {
		r.status, r.message = navarchv1.SyncStatusUnknown, err.Error()
		r.compareError = fmt.Sprintf("%s %s: %v", r.ref.Kind, objName(r.obj), err)
	}
	live, err := remote.Live(ctx, r.mapping, r.ref.Namespace, r.ref.Name)
	if err != nil {
		unknown(err)
		return
	}
	if live == nil {
		// Nobody manages it yet. The dry run validates it and tells whether it exists: the
		// server gives an object it would create no resourceVersion. A successful dry run of
		// an absent object is cached like any other, so steps waiting for earlier waves cost
		// no dry runs of the later ones.
		cacheKey, desiredHash := remote.Name+"/"+r.key(), diff.Hash(r.obj)
		if _, ok := e.dryRuns.get(cacheKey, desiredHash, absent, ignoreHash); ok {
			r.message = "missing from the cluster"
			r.health = &navarchv1.HealthStatus{Status: navarchv1.HealthMissing}
			return
		}
		// A dry run in a namespace that does not exist can only fail: one lookup of the
		// namespace spares the dry runs of all its objects.
		if r.ref.Namespace != "" && !namespaces.exists(ctx, r.ref.Namespace) {
			r.missingNamespace = true
			r.message = fmt.Sprintf("namespace %q does not exist yet", r.ref.Namespace)
			r.health = &navarchv1.HealthStatus{Status: navarchv1.HealthMissing}
			return
		}
		predicted, err := e.dryRun(ctx, remote, r)
		if err == nil && predicted.GetResourceVersion() == "" {
			e.dryRuns.put(cacheKey, desiredHash, absent, ignoreHash, diff.Result{})
		}
		switch {
		case isMissingNamespace(err):
			r.missingNamespace = true
			r.message = fmt.Sprintf("namespace %q does not exist yet", r.ref.Namespace)
		case transient(err):
			unknown(err)
		case err != nil:
			r.dryRunErr = err
			r.message = err.Error()
		case predicted.GetResourceVersion() != "":
			// It exists, unmanaged: compare with it.
			if live, err = e.get(ctx, remote, r); err != nil {
				unknown(err)
				return
			}
		}
		if live == nil {
			if r.message == "" {
				r.message = "missing from the cluster"
			}
			r.health = &navarchv1.HealthStatus{Status: navarchv1.HealthMissing}
			return
		}
	}
	r.live = live
	r.health = health.Assess(live)
	if owner, ok := clustercache.TrackedBy(live); ok && owner != appKey {
		r.sharedWith = owner.String()
	}

	liveForDiff := live
	if ig.NeedsManagedFields(r.gvk, r.ref.Namespace, r.ref.Name) {
		if full, err := e.get(ctx, remote, r); err == nil && full != nil {
			liveForDiff = full
		}
	}
	desiredHash, liveHash := diff.Hash(r.obj), diff.Hash(liveForDiff)
	result, ok := e.dryRuns.get(remote.Name+"/"+r.key(), desiredHash, liveHash, ignoreHash)
	if !ok {
		predicted, err := e.dryRun(ctx, remote, r)
		if transient(err) {
			r.status, r.message = navarchv1.SyncStatusUnknown, err.Error()
			r.compareError = fmt.Sprintf("%s %s: %v", r.ref.Kind, objName(r.obj), err)
			return
		}
		if err != nil {
			r.dryRunErr = err
			r.message = err.Error()
			return
		}
		result = diff.Compare(predicted, liveForDiff, ig)
		e.dryRuns.put(remote.Name+"/"+r.key(), desiredHash, liveHash, ignoreHash, result)
	}
	if result.Equal {
		r.status = navarchv1.SyncStatusSynced
		r.message = ""
		return
	}
	r.message = "differs at " + strings.Join(result.Paths, ", ")
	if result.Truncated {
		r.message += ", ..."
	}
}

// get reads an object directly from the cluster, managedFields included; nil when absent.
func (e *Engine) get(ctx context.Context, remote *cluster, r *resource) (*unstructured.Unstructured, error) {
	obj, err := remote.Resource(r.mapping, r.ref.Namespace).Get(ctx, r.ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// isMissingNamespace reports whether err says the object's namespace does not exist, which a
// sync creating the namespace first will fix.
func isMissingNamespace(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// transient reports whether err is a failure to talk to the cluster (network, timeouts,
// throttling, server errors) rather than the server rejecting the object: transient errors
// leave the comparison Unknown and an operation running, to be retried.
func transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.As(err, new(*PermanentError)) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	code := status.Status().Code
	return code == 0 || code >= 500 || code == 429 || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}

// PermanentError is an error that retrying cannot fix, e.g. a bad ignoreDifferences rule.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }

func (e *PermanentError) Unwrap() error { return e.Err }

func ignoreKey(rules []navarchv1.ResourceIgnoreDifferences) string {
	if len(rules) == 0 {
		return ""
	}
	return fmt.Sprintf("%v", rules)
}
