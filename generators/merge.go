package generators

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Merge is the merge generator. The first child's parameter sets are the base, in their
// order; a set of a later child whose mergeKeys values equal a base set's is laid over it (its
// keys win; goTemplate nested maps are merged), later children over earlier ones. Sets of later
// children matching no base set are dropped.
//
// Within one child the mergeKeys values must be unique (as in Argo CD), and every set must
// define every merge key: Argo CD would silently treat a missing key as null, navarch reports
// it. In goTemplate mode a dotted merge key ("path.basename") reaches into nested maps.
type Merge struct {
	// Spec is the generator's spec.
	Spec *navarchv1.MergeGenerator
	// Field is the spec's path, e.g. "spec.generators[0].merge".
	Field string
}

func (g Merge) validate() error {
	if len(g.Spec.MergeKeys) == 0 {
		return fmt.Errorf("%s.mergeKeys: must have at least one key", g.Field)
	}
	for i, k := range g.Spec.MergeKeys {
		if k == "" {
			return fmt.Errorf("%s.mergeKeys[%d]: must not be empty", g.Field, i)
		}
	}
	_, err := g.children()
	return err
}

func (g Merge) children() ([]Generator, error) { return nestedChildren(g.Field, g.Spec.Generators) }

func (g Merge) childField(i int) string { return childField(g.Field, i) }

// RequeueAfter implements Generator: the smallest interval of any child.
func (g Merge) RequeueAfter() time.Duration { return childrenRequeue(g.Field, g.Spec.Generators) }

// Params implements Generator.
func (g Merge) Params(ctx context.Context, in Inputs) ([]map[string]any, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	children, _ := g.children()
	keys := uniqueStrings(g.Spec.MergeKeys)

	var merged []map[string]any
	var baseIndex map[string]int
	for i, child := range children {
		field := g.childField(i)
		sets, err := child.Params(ctx, in)
		if err != nil {
			return nil, err
		}
		index := make(map[string]int, len(sets))
		for j, set := range sets {
			id, err := mergeID(set, keys, in.GoTemplate)
			if err != nil {
				return nil, fmt.Errorf("%s: parameter set %d: %w", field, j, err)
			}
			if prev, dup := index[id]; dup {
				return nil, fmt.Errorf("%s: parameter sets %d and %d have the same mergeKeys values %s; merge needs them unique", field, prev, j, id)
			}
			index[id] = j
		}
		if i == 0 {
			merged = append([]map[string]any(nil), sets...)
			baseIndex = index
			continue
		}
		for id, j := range index {
			if b, ok := baseIndex[id]; ok {
				merged[b] = mergeMaps(merged[b], sets[j])
			}
		}
	}
	return merged, nil
}

// mergeID identifies a parameter set by its values of the merge keys.
func mergeID(set map[string]any, keys []string, goTemplate bool) (string, error) {
	values := make([]any, len(keys))
	for i, k := range keys {
		v, ok := lookupParam(set, k, goTemplate)
		if !ok {
			return "", fmt.Errorf("merge key %q is not a parameter", k)
		}
		values[i] = v
	}
	id, err := json.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("merge keys: %w", err)
	}
	return string(id), nil
}

// uniqueStrings returns ss without repeats, in first-seen order.
func uniqueStrings(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
