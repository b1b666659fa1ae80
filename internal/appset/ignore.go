package appset

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// IgnoreDifferences makes desired keep the live value of every field that
// spec.ignoreApplicationDifferences lists for it, so hand edits of those fields survive. A
// field ignored but absent from the live Application is removed from desired too. Pointers and
// jq paths are relative to the Application object, e.g. /spec/source/targetRevision.
func IgnoreDifferences(rules []navarchv1.ApplicationSetIgnoreDifferences, desired, live *navarchv1.Application) error {
	applies := func(r navarchv1.ApplicationSetIgnoreDifferences) bool { return r.Name == "" || r.Name == desired.Name }
	if !slices.ContainsFunc(rules, applies) {
		return nil
	}
	want, err := toTree(desired)
	if err != nil {
		return err
	}
	have, err := toTree(live)
	if err != nil {
		return err
	}
	for i, r := range rules {
		if !applies(r) {
			continue // i stays the rule's index in the spec, for error messages
		}
		for j, p := range r.JSONPointers {
			path, err := parsePointer(p)
			if err != nil {
				return fmt.Errorf("spec.ignoreApplicationDifferences[%d].jsonPointers[%d]: %w", i, j, err)
			}
			copyPath(want, have, path)
		}
		for j, expr := range r.JQPathExpressions {
			paths, err := jqPaths(expr, have, want)
			if err != nil {
				return fmt.Errorf("spec.ignoreApplicationDifferences[%d].jqPathExpressions[%d]: %w", i, j, err)
			}
			for _, path := range paths {
				copyPath(want, have, path)
			}
		}
	}
	data, err := json.Marshal(want)
	if err != nil {
		return err
	}
	out := &navarchv1.Application{}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("spec.ignoreApplicationDifferences: the result is not a valid Application: %w", err)
	}
	desired.Spec, desired.Labels, desired.Annotations = out.Spec, out.Labels, out.Annotations
	return nil
}

func toTree(app *navarchv1.Application) (map[string]any, error) {
	data, err := json.Marshal(struct {
		Metadata map[string]any            `json:"metadata"`
		Spec     navarchv1.ApplicationSpec `json:"spec"`
	}{
		Metadata: map[string]any{"labels": app.Labels, "annotations": app.Annotations},
		Spec:     app.Spec,
	})
	if err != nil {
		return nil, err
	}
	var tree map[string]any
	return tree, json.Unmarshal(data, &tree)
}

// parsePointer parses an RFC 6901 JSON pointer.
func parsePointer(p string) ([]any, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer: it must start with /", p)
	}
	var path []any
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		path = append(path, tok)
	}
	return path, nil
}

// jqPaths returns the paths expr selects in either tree.
func jqPaths(expr string, trees ...map[string]any) ([][]any, error) {
	q, err := gojq.Parse("path(" + expr + ")")
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	var paths [][]any
	for _, tree := range trees {
		iter := code.Run(tree)
		for {
			v, ok := iter.Next()
			if !ok {
				break
			}
			if _, isErr := v.(error); isErr {
				break // a path that does not exist in this tree
			}
			if p, ok := v.([]any); ok {
				paths = append(paths, p)
			}
		}
	}
	return paths, nil
}

// copyPath sets path in dst to its value in src, or deletes it from dst when src lacks it.
func copyPath(dst, src map[string]any, path []any) {
	if len(path) == 0 {
		return
	}
	val, ok := lookup(src, path)
	parent, ok2 := lookupParent(dst, path, ok)
	if !ok2 {
		return
	}
	last := path[len(path)-1]
	switch p := parent.(type) {
	case map[string]any:
		key := fmt.Sprint(last)
		if ok {
			p[key] = val
		} else {
			delete(p, key)
		}
	case []any:
		if i, isIdx := index(last); isIdx && i < len(p) && ok {
			p[i] = val
		}
	}
}

func lookup(tree any, path []any) (any, bool) { return descend(tree, path, false) }

// lookupParent returns the container of path's last element in tree, creating intermediate
// maps when create is set (the live value must be placed even where desired has no parent).
func lookupParent(tree map[string]any, path []any, create bool) (any, bool) {
	return descend(tree, path[:len(path)-1], create)
}

// descend follows path through maps and lists; with create, a missing map entry becomes an
// empty map instead of a miss.
func descend(tree any, path []any, create bool) (any, bool) {
	cur := tree
	for _, seg := range path {
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[fmt.Sprint(seg)]
			if !ok || (create && next == nil) {
				if !create {
					return nil, false
				}
				next = map[string]any{}
				c[fmt.Sprint(seg)] = next
			}
			cur = next
		case []any:
			i, ok := index(seg)
			if !ok || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func index(seg any) (int, bool) {
	switch s := seg.(type) {
	case int:
		return s, s >= 0
	case float64:
		return int(s), s >= 0
	case string:
		i, err := strconv.Atoi(s)
		return i, err == nil && i >= 0
	}
	return 0, false
}
