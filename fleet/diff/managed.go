package diff

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// managedPath is a field listed in metadata.managedFields, in the server's own path form:
// list elements are named by key or value, so the path is resolved against each object.
type managedPath fieldpath.Path

// managedPaths returns the leaf fields that live's managedFields entries of the managers the
// rules list own. An entry whose fieldsV1 cannot be parsed is skipped: its fields are then
// compared, which errs on the side of reporting a difference.
func managedPaths(live *unstructured.Unstructured, rules []*rule) []managedPath {
	var managers []string
	for _, r := range rules {
		managers = append(managers, r.managers...)
	}
	if len(managers) == 0 || live == nil {
		return nil // reading managedFields converts them; skip that when no rule needs them
	}
	owned := &fieldpath.Set{}
	for _, e := range live.GetManagedFields() {
		if e.FieldsV1 == nil || !slices.Contains(managers, e.Manager) {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			continue
		}
		owned = owned.Union(set)
	}
	// Leaves only: owning a map or list element (the "." entry) also marks its parent, and
	// removing the parent would hide fields other managers own.
	var out []managedPath
	owned.Leaves().Iterate(func(p fieldpath.Path) {
		out = append(out, managedPath(p.Copy()))
	})
	return out
}

// resolve returns the path of p in tree: a field name is a map key, an index a list index,
// and a key or value the index of the list element that matches it.
func (p managedPath) resolve(tree any) ([]any, bool) {
	out := make([]any, 0, len(p))
	cur := tree
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return nil, false
			}
			out = append(out, *pe.FieldName)
		case pe.Index != nil:
			list, ok := cur.([]any)
			if !ok || *pe.Index < 0 || *pe.Index >= len(list) {
				return nil, false
			}
			cur = list[*pe.Index]
			out = append(out, *pe.Index)
		default:
			list, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			i := slices.IndexFunc(list, func(e any) bool { return elementMatches(pe, e) })
			if i < 0 {
				return nil, false
			}
			cur = list[i]
			out = append(out, i)
		}
	}
	return out, true
}

// elementMatches reports whether the list element e is the one pe names by key or value.
func elementMatches(pe fieldpath.PathElement, e any) bool {
	switch {
	case pe.Key != nil:
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		for _, f := range *pe.Key {
			if !valuesEqual(m[f.Name], f.Value.Unstructured()) {
				return false
			}
		}
		return true
	case pe.Value != nil:
		return valuesEqual(e, (*pe.Value).Unstructured())
	}
	return false
}

// valuesEqual compares two values the way Compare does.
func valuesEqual(a, b any) bool {
	var w walker
	w.walk("", a, b)
	return len(w.paths) == 0
}
