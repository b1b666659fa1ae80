package generators

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Matrix is the matrix generator: the Cartesian product of its children's parameter sets,
// earlier children varying slowest. Unlike Argo CD (exactly two children, one nesting level) it
// takes any number of children and nested matrix/merge generators to any depth.
//
// A later child may use the parameters of the earlier ones: before child i > 0 runs for a
// parameter set of the product so far, every string of its spec (except its own selector and
// `values`) is rendered with that set, e.g. a git generator with `path: "{{path.basename}}/*"`.
// The child's `values` are rendered by the child itself, with that set and its own parameters
// (the earlier child's win), so `values: {target: "{{ .path.basename }}-{{ .name }}"}` on a
// clusters child after a git child works, as in Argo CD 3.5. A child whose spec and values
// hold no "{{" runs once. Two children defining the same parameter: in fasttemplate mode the
// values must be equal (an error otherwise, as in Argo CD); in goTemplate mode nested maps are
// merged and the earlier child wins. Children's template overrides are ignored, as in
// Argo CD. The product is capped by Inputs.MaxParamSets while it is built.
type Matrix struct {
	// Spec is the generator's spec.
	Spec *navarchv1.MatrixGenerator
	// Field is the spec's path, e.g. "spec.generators[0].matrix".
	Field string
}

func (g Matrix) validate() error {
	_, err := g.children()
	return err
}

func (g Matrix) children() ([]Generator, error) { return nestedChildren(g.Field, g.Spec.Generators) }

func (g Matrix) childField(i int) string { return childField(g.Field, i) }

// RequeueAfter implements Generator: the smallest interval of any child.
func (g Matrix) RequeueAfter() time.Duration { return childrenRequeue(g.Field, g.Spec.Generators) }

// nestedChildren binds every child of a matrix or merge to its unrendered spec, validating the
// whole subtree.
func nestedChildren(field string, specs []navarchv1.NestedGenerator) ([]Generator, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("%s.generators: must have at least one generator", field)
	}
	out := make([]Generator, len(specs))
	for i := range specs {
		child, err := NewNested(childField(field, i), &specs[i])
		if err != nil {
			return nil, err
		}
		out[i] = child
	}
	return out, nil
}

func childField(field string, i int) string { return fmt.Sprintf("%s.generators[%d]", field, i) }

// childrenRequeue is the smallest requeue interval of any child; 0 when the children are invalid.
func childrenRequeue(field string, specs []navarchv1.NestedGenerator) time.Duration {
	children, err := nestedChildren(field, specs)
	if err != nil {
		return 0
	}
	return minChildRequeue(children)
}

func minChildRequeue(children []Generator) time.Duration {
	var d time.Duration
	for _, c := range children {
		d = MinRequeue(d, c.RequeueAfter())
	}
	return d
}

// Params implements Generator.
func (g Matrix) Params(ctx context.Context, in Inputs) ([]map[string]any, error) {
	children, err := g.children()
	if err != nil {
		return nil, err
	}
	// Generate already does this; direct callers get the same single read per repository.
	in.Git = newSnapshotCache(in.Git)
	limit := in.maxParamSets()
	product := []map[string]any{{}}
	for i, child := range children {
		field := g.childField(i)
		spec := &g.Spec.Generators[i]
		// A nested matrix or merge is not rendered as a whole: its own later children may use
		// their earlier siblings' parameters, unknown at this level. It gets the parameters in
		// scope here (in.outer) and renders each of its children with them.
		nested := spec.Matrix != nil || spec.Merge != nil
		var tmpl *childTemplate
		if (i > 0 || len(in.outer) > 0) && !nested {
			if tmpl, err = newChildTemplate(spec); err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
		}
		var static []map[string]any
		staticDone := false
		byRendered := map[string][]map[string]any{}
		next := make([]map[string]any, 0, len(product))
		for _, set := range product {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			scope := withOuter(in.outer, set)
			var sets []map[string]any
			switch {
			case nested && len(scope) > 0:
				childIn := in
				childIn.outer = scope
				if sets, err = child.Params(ctx, childIn); err != nil {
					return nil, err
				}
			case tmpl == nil || len(scope) == 0:
				if !staticDone {
					childIn := in
					childIn.outer = nil
					if static, err = child.Params(ctx, childIn); err != nil {
						return nil, err
					}
					staticDone = true
				}
				sets = static
			default:
				if sets, err = tmpl.params(ctx, in, field, scope, byRendered); err != nil {
					return nil, err
				}
			}
			for _, s := range sets {
				combined, err := combineMatrix(field, set, s, in.GoTemplate)
				if err != nil {
					return nil, err
				}
				next = append(next, combined)
				if len(next) > limit {
					return nil, &LimitError{Field: g.Field, Count: len(next), Limit: limit, AtLeast: true}
				}
			}
		}
		product = next
		if len(product) == 0 {
			// Nothing to combine with: later children are not run, as in Argo CD.
			break
		}
	}
	return product, nil
}

// childTemplate is a matrix child's spec decoded as a JSON tree, ready to be rendered with
// the parameters of the earlier children. Its own selector is kept aside: like Argo CD, a
// child's selector filters with the names as written. So are its `values`: the child renders
// them itself, once it knows its own parameters, with the earlier ones in Inputs.outer.
type childTemplate struct {
	tree     any
	selector *metav1.LabelSelector
	// values is the unrendered `values` of the generator kind that has them, by kind.
	values map[string]any
	// treeTemplated says the tree holds a template action; valuesTemplated says values do,
	// so the child's parameter sets depend on the earlier set, not only on the rendered tree.
	treeTemplated, valuesTemplated bool
}

// newChildTemplate returns nil when the child holds no template action, so it runs once. The
// child's own template override is dropped before rendering: it is ignored anyway, and would
// otherwise be rendered with parameters it was not written for (an error with
// missingkey=error).
func newChildTemplate(child *navarchv1.NestedGenerator) (*childTemplate, error) {
	spec := *child
	spec.Selector = nil
	raw, err := json.Marshal(&spec)
	if err != nil {
		return nil, err
	}
	tree, err := decodeTree(raw)
	if err != nil {
		return nil, err
	}
	t := &childTemplate{tree: tree, selector: child.Selector, values: map[string]any{}}
	if top, ok := tree.(map[string]any); ok {
		for kind, gen := range top {
			m, ok := gen.(map[string]any)
			if !ok {
				continue
			}
			delete(m, "template")
			if v, ok := m["values"]; ok {
				t.values[kind] = v
				delete(m, "values")
			}
		}
	}
	if t.treeTemplated, err = holdsAction(tree); err != nil {
		return nil, err
	}
	if t.valuesTemplated, err = holdsAction(t.values); err != nil {
		return nil, err
	}
	if !t.treeTemplated && !t.valuesTemplated {
		return nil, nil
	}
	return t, nil
}

// holdsAction reports whether a decoded JSON tree holds a template action anywhere.
func holdsAction(tree any) (bool, error) {
	raw, err := json.Marshal(tree)
	if err != nil {
		return false, err
	}
	return bytes.Contains(raw, []byte("{{")), nil
}

// params runs the child for one parameter set of the product so far (scope, with the enclosing
// matrices' parameters). Identical renderings run once, through cache, unless the child's
// values depend on scope: those runs are not cached.
func (t *childTemplate) params(ctx context.Context, in Inputs, field string, scope map[string]any,
	cache map[string][]map[string]any) ([]map[string]any, error) {
	rendered, key, err := t.render(in, field, scope)
	if err != nil {
		return nil, err
	}
	if sets, ok := cache[key]; ok {
		return sets, nil
	}
	gen, err := NewNested(field, rendered)
	if err != nil {
		return nil, fmt.Errorf("%w (after rendering with an earlier generator's parameters)", err)
	}
	childIn := in
	childIn.outer = scope
	sets, err := gen.Params(ctx, childIn)
	if err != nil {
		return nil, err
	}
	if !t.valuesTemplated {
		cache[key] = sets
	}
	return sets, nil
}

// render renders every string and map key of the child with params, puts the child's values
// back as written, and decodes the result; key is the rendered JSON, so identical renderings
// can share a run.
func (t *childTemplate) render(in Inputs, field string, params map[string]any) (*navarchv1.NestedGenerator, string, error) {
	tree := t.tree
	if t.treeTemplated {
		var err error
		if tree, err = renderTree(in, t.tree, params); err != nil {
			return nil, "", fmt.Errorf("%s: render with an earlier generator's parameters: %w", field, err)
		}
	}
	raw, err := json.Marshal(withValues(tree, t.values))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", field, err)
	}
	out := &navarchv1.NestedGenerator{}
	if err := decodeStrict(raw, out); err != nil {
		return nil, "", fmt.Errorf("%s: after rendering with an earlier generator's parameters: %w", field, err)
	}
	out.Selector = t.selector
	return out, string(raw), nil
}

// withValues returns a copy of the top level of a child's tree with each kind's values set
// again; the tree itself is not modified.
func withValues(tree any, values map[string]any) any {
	top, ok := tree.(map[string]any)
	if !ok || len(values) == 0 {
		return tree
	}
	out := make(map[string]any, len(top))
	for kind, gen := range top {
		m, ok := gen.(map[string]any)
		v, has := values[kind]
		if !ok || !has {
			out[kind] = gen
			continue
		}
		withV := make(map[string]any, len(m)+1)
		for k, item := range m {
			withV[k] = item
		}
		withV["values"] = v
		out[kind] = withV
	}
	return out
}

// decodeTree decodes JSON keeping numbers as written.
func decodeTree(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return tree, nil
}

// renderTree returns a copy of tree with every string, and every map key, rendered.
func renderTree(in Inputs, tree any, params map[string]any) (any, error) {
	switch t := tree.(type) {
	case string:
		return in.render(t, params)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, v := range t {
			rk, err := in.render(k, params)
			if err != nil {
				return nil, err
			}
			rv, err := renderTree(in, v, params)
			if err != nil {
				return nil, err
			}
			out[rk] = rv
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			rv, err := renderTree(in, v, params)
			if err != nil {
				return nil, err
			}
			out[i] = rv
		}
		return out, nil
	default:
		return tree, nil
	}
}

// withOuter is the parameters a child is rendered with: those of the enclosing matrices, then
// the current set of this matrix's earlier children, which win.
func withOuter(outer, set map[string]any) map[string]any {
	if len(outer) == 0 {
		return set
	}
	scope := make(map[string]any, len(outer)+len(set))
	for k, v := range outer {
		scope[k] = v
	}
	for k, v := range set {
		scope[k] = v
	}
	return scope
}
