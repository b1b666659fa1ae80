package jsontree

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Lookup returns the value at path in tree and whether it is there. An empty path is the
// whole tree.
func Lookup(tree any, path []any) (any, bool) {
	cur := tree
	for _, seg := range path {
		next, ok := child(cur, seg)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// Copy sets path in dst to a deep copy of its value in src, or removes path from dst when src
// does not have it. Maps missing from dst on the way are created where src has maps; a path
// through a list element dst lacks is left alone, as is the empty path.
func Copy(dst, src map[string]any, path []any) {
	if len(path) == 0 {
		return
	}
	val, ok := Lookup(src, path)
	if !ok {
		Remove(dst, path)
		return
	}
	var parent any = dst
	for i, seg := range path[:len(path)-1] {
		next, found := child(parent, seg)
		if !found || next == nil {
			// Only a map can be created from nothing: a list element has no key to create.
			m, isMap := parent.(map[string]any)
			srcNext, _ := Lookup(src, path[:i+1])
			if _, srcIsMap := srcNext.(map[string]any); !isMap || !srcIsMap {
				return
			}
			next = map[string]any{}
			m[key(seg)] = next
		}
		parent = next
	}
	switch p := parent.(type) {
	case map[string]any:
		p[key(path[len(path)-1])] = DeepCopy(val)
	case []any:
		if i, ok := index(path[len(path)-1]); ok && i < len(p) {
			p[i] = DeepCopy(val)
		}
	}
}

// Remove deletes the value at path from tree: a map entry is deleted, a list element is cut
// out (the later elements move down by one). It reports whether anything was removed; the
// empty path removes nothing.
func Remove(tree map[string]any, path []any) bool {
	if len(path) == 0 {
		return false
	}
	parentPath, last := path[:len(path)-1], path[len(path)-1]
	parent, ok := Lookup(tree, parentPath)
	if !ok {
		return false
	}
	switch p := parent.(type) {
	case map[string]any:
		k := key(last)
		if _, ok := p[k]; !ok {
			return false
		}
		delete(p, k)
		return true
	case []any:
		i, ok := index(last)
		if !ok || i >= len(p) {
			return false
		}
		// The parent list is never the root, so its container holds it; the shortened
		// slice header must be stored back there.
		shorter := slices.Delete(p, i, i+1)
		grand, _ := Lookup(tree, parentPath[:len(parentPath)-1])
		switch g := grand.(type) {
		case map[string]any:
			g[key(parentPath[len(parentPath)-1])] = shorter
		case []any:
			j, _ := index(parentPath[len(parentPath)-1])
			g[j] = shorter
		}
		return true
	}
	return false
}

// CopyAll copies every path of paths from src to dst like Copy, in an order that keeps list
// indexes valid: later elements and deeper paths first, each path once.
func CopyAll(dst, src map[string]any, paths [][]any) {
	for _, p := range editOrder(paths) {
		Copy(dst, src, p)
	}
}

// RemoveAll removes every path of paths from tree like Remove, in an order that keeps list
// indexes valid: later elements and deeper paths first, each path once. Paths must all have
// been found in tree before any is removed, e.g. by JQ.Paths.
func RemoveAll(tree map[string]any, paths [][]any) {
	for _, p := range editOrder(paths) {
		Remove(tree, p)
	}
}

// editOrder sorts a copy of paths in descending order and drops duplicates. Descending, a
// list's higher indexes come before its lower ones and a path's extensions before the path
// itself, so cutting a list element never shifts an element still to be edited.
func editOrder(paths [][]any) [][]any {
	out := slices.Clone(paths)
	slices.SortFunc(out, func(a, b []any) int { return comparePaths(b, a) })
	return slices.CompactFunc(out, func(a, b []any) bool { return comparePaths(a, b) == 0 })
}

func comparePaths(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := compareSegments(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// compareSegments orders list indexes numerically (so 10 comes after 9) and map keys as
// strings; an index sorts before a key, which never matters as one container has only one
// kind.
func compareSegments(a, b any) int {
	ia, aIdx := index(a)
	ib, bIdx := index(b)
	switch {
	case aIdx && bIdx:
		return cmp.Compare(ia, ib)
	case aIdx:
		return -1
	case bIdx:
		return 1
	}
	return cmp.Compare(key(a), key(b))
}

// DeepCopy returns a copy of v that shares no map or list with it; scalars are returned as
// they are.
func DeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = DeepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = DeepCopy(e)
		}
		return out
	}
	return v
}

// child returns the element seg of a map or list.
func child(cur, seg any) (any, bool) {
	switch c := cur.(type) {
	case map[string]any:
		v, ok := c[key(seg)]
		return v, ok
	case []any:
		i, ok := index(seg)
		if !ok || i >= len(c) {
			return nil, false
		}
		return c[i], true
	}
	return nil, false
}

func key(seg any) string {
	if s, ok := seg.(string); ok {
		return s
	}
	return fmt.Sprint(seg)
}

// index reads a list index from a path element: an int from jq, a string from a pointer.
func index(seg any) (int, bool) {
	switch s := seg.(type) {
	case int:
		return s, s >= 0
	case int64:
		return int(s), s >= 0
	case float64:
		return int(s), s >= 0 && s == float64(int(s))
	case string:
		// RFC 6901: an index is 0 or digits without a leading zero.
		if s == "" || len(s) > 1 && s[0] == '0' || strings.Trim(s, "0123456789") != "" {
			return 0, false
		}
		i, err := strconv.Atoi(s)
		return i, err == nil
	}
	return 0, false
}
