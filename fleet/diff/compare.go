// Package diff decides whether a live Kubernetes object matches what Git asks for. The fleet
// reconciler applies the desired object with a server-side-apply dry run, which returns the
// object as the server would store it ("predicted"), and hands predicted and live to Compare.
// Both are normalised (server-set noise and status dropped), the fields an Application's
// spec.ignoreDifferences names are removed from both, and what remains is compared leaf by
// leaf. RespectLive carries ignored fields from live into the desired object before a sync.
//
// The package is pure: it makes no client calls, so it runs the same in the controller, in
// tests and in benchmarks.
package diff

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/navarch-io/navarch/internal/jsontree"
)

// MaxPaths is the number of differing paths a Result lists at most.
const MaxPaths = 20

// Result is the outcome of Compare.
type Result struct {
	// Equal is true when predicted and live match outside the ignored fields.
	Equal bool
	// Paths are the JSON pointers of the differing leaves or subtrees, sorted, at most
	// MaxPaths, e.g. "/spec/template/spec/containers/0/image". A list whose length differs is
	// reported as the list, a field present on one side only as the field.
	Paths []string
	// Truncated is true when more than MaxPaths paths differ.
	Truncated bool
}

// Compare reports whether predicted, the server-side-apply dry-run result of the desired
// object, matches live. Both are normalised with Normalize; then every field the rules of ig
// selecting live ignore is removed from both: jsonPointers, jqPathExpressions (evaluated on
// each object separately, so a list element is found by its content on each side) and, for
// managedFieldsManagers, every field that live's metadata.managedFields lists for one of the
// managers. Maps are compared key by key, lists index by index, numbers by value (int64 3
// equals float64 3). A null or empty-map value equals an absent field. A nil ig ignores
// nothing; neither object is modified.
func Compare(predicted, live *unstructured.Unstructured, ig *Ignore) Result {
	rules := ig.matchingObject(live)
	if len(rules) == 0 {
		rules = ig.matchingObject(predicted)
	}
	managed := managedPaths(live, rules)
	want, have := Normalize(predicted).Object, Normalize(live).Object
	for _, tree := range []map[string]any{want, have} {
		// Every path is found before any is removed: removing a list element shifts the rest.
		var paths [][]any
		for _, r := range rules {
			paths = append(paths, r.pointers...)
			for _, q := range r.jq {
				paths = append(paths, q.Paths(tree)...)
			}
		}
		for _, m := range managed {
			if p, ok := m.resolve(tree); ok {
				paths = append(paths, p)
			}
		}
		jsontree.RemoveAll(tree, paths)
	}

	var w walker
	w.walk("", want, have)
	res := Result{Equal: len(w.paths) == 0}
	slices.Sort(w.paths)
	if len(w.paths) > MaxPaths {
		w.paths, res.Truncated = w.paths[:MaxPaths], true
	}
	res.Paths = w.paths
	return res
}

// walker collects the JSON pointers at which two trees differ.
type walker struct {
	paths []string
}

func (w *walker) walk(ptr string, a, b any) {
	if isEmpty(a) && isEmpty(b) {
		return
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		for k, ae := range av {
			be, ok := bv[k]
			if !ok && !isEmpty(ae) {
				w.paths = append(w.paths, ptr+"/"+jsontree.EscapeToken(k))
				continue
			}
			w.walk(ptr+"/"+jsontree.EscapeToken(k), ae, be)
		}
		for k, be := range bv {
			if _, ok := av[k]; !ok && !isEmpty(be) {
				w.paths = append(w.paths, ptr+"/"+jsontree.EscapeToken(k))
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			break
		}
		for i := range av {
			w.walk(ptr+"/"+strconv.Itoa(i), av[i], bv[i])
		}
		return
	default:
		if scalarEqual(a, b) {
			return
		}
	}
	w.paths = append(w.paths, ptr)
}

// isEmpty reports whether v is null or a map holding only empty values: such a field means
// the same as an absent one, e.g. the annotations {} left when the last annotation is
// ignored.
func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range t {
			if !isEmpty(e) {
				return false
			}
		}
		return true
	}
	return false
}

// scalarEqual compares two non-container values, numbers by value whatever their Go type.
func scalarEqual(a, b any) bool {
	an, aNum := number(a)
	bn, bNum := number(b)
	if aNum || bNum {
		return aNum && bNum && an.equal(bn)
	}
	switch a.(type) {
	case map[string]any, []any:
		return false
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	return reflect.DeepEqual(a, b)
}

// num is a JSON number held exactly: as an integer when it is one, else as a float.
type num struct {
	i     int64
	f     float64
	isInt bool
}

func (n num) equal(m num) bool {
	switch {
	case n.isInt && m.isInt:
		return n.i == m.i
	case n.isInt:
		return float64(n.i) == m.f && m.f == math.Trunc(m.f) && int64(m.f) == n.i
	case m.isInt:
		return m.equal(n)
	}
	return n.f == m.f
}

func number(v any) (num, bool) {
	switch t := v.(type) {
	case int64:
		return num{i: t, isInt: true}, true
	case int:
		return num{i: int64(t), isInt: true}, true
	case int32:
		return num{i: int64(t), isInt: true}, true
	case float64:
		return num{f: t}, true
	case float32:
		return num{f: float64(t)}, true
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return num{i: i, isInt: true}, true
		}
		f, err := t.Float64()
		return num{f: f}, err == nil
	}
	return num{}, false
}
