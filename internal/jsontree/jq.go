package jsontree

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/itchyny/gojq"
)

// maxPaths bounds the paths one JQ.Paths call takes from one tree, so an expression such as
// repeat(.) cannot run forever.
const maxPaths = 10000

// JQ is a compiled jq expression that selects paths, e.g.
// `.spec.template.spec.containers[] | select(.name == "web") | .image`. Compile once with
// CompileJQ and run it on many trees; it is safe for concurrent use.
type JQ struct {
	expr string
	code *gojq.Code
}

// CompileJQ compiles expr as the argument of jq's path(). Errors quote the expression.
func CompileJQ(expr string) (*JQ, error) {
	q, err := gojq.Parse("path(" + expr + ")")
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	return &JQ{expr: expr, code: code}, nil
}

// String returns the expression as written.
func (q *JQ) String() string { return q.expr }

// Paths returns the paths the expression selects in each of trees, in order. A tree in which
// the expression fails, e.g. iterating a field that is missing, contributes the paths found
// before the failure; list indexes in the result are ints. Trees may hold any Go number type
// (unstructured objects hold int64); they are not modified.
func (q *JQ) Paths(trees ...any) [][]any {
	var paths [][]any
	for _, tree := range trees {
		iter := q.code.Run(jqValue(tree))
		for range maxPaths {
			v, ok := iter.Next()
			if !ok {
				break
			}
			if _, isErr := v.(error); isErr {
				break // the expression does not apply to this tree
			}
			if p, ok := v.([]any); ok {
				paths = append(paths, p)
			}
		}
	}
	return paths
}

// jqValue returns a copy of v with its numbers in the types gojq computes with (int,
// float64): gojq treats other number types, such as the int64 of unstructured objects, as
// invalid values.
func jqValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = jqValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = jqValue(e)
		}
		return out
	case int64:
		if t >= math.MinInt && t <= math.MaxInt {
			return int(t)
		}
		return float64(t)
	case int32:
		return int(t)
	case uint64:
		if t <= math.MaxInt {
			return int(t)
		}
		return float64(t)
	case uint32:
		return int(t)
	case float32:
		return float64(t)
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return jqValue(i)
		}
		f, _ := t.Float64()
		return f
	}
	return v
}
