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
// parameter set of the product so far, every string of its spec (except its own selector) is
// rendered with that set, e.g. a git generator with `path: "{{path.basename}}/*"`. A child
// whose spec holds no "{{" runs once. Two children defining the same parameter: in fasttemplate
// mode the values must be equal (an error otherwise, as in Argo CD); in goTemplate mode nested
// maps are merged and the earlier child wins. Children's template overrides are ignored, as in
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
				rendered, key, err := tmpl.render(in, field, scope)
				if err != nil {
					return nil, err
				}
				cached, ok := byRendered[key]
				if !ok {
					gen, err := NewNested(field, rendered)
					if err != nil {
						return nil, fmt.Errorf("%w (after rendering with an earlier generator's parameters)", err)
					}
					if cached, err = gen.Params(ctx, in); err != nil {
						return nil, err
					}
					byRendered[key] = cached
				}
				sets = cached
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
// child's selector filters with the names as written.
type childTemplate struct {
	tree     any
	selector *metav1.LabelSelector
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
	if top, ok := tree.(map[string]any); ok {
		for _, kind := range top {
			if m, ok := kind.(map[string]any); ok {
				delete(m, "template")
			}
		}
	}
	if raw, err = json.Marshal(tree); err != nil {
		return nil, err
	}
	if !bytes.Contains(raw, []byte("{{")) {
		return nil, nil
	}
	return &childTemplate{tree: tree, selector: child.Selector}, nil
}

// render renders every string and map key of the child with params and decodes the result;
// key is the rendered JSON, so identical renderings run the child once.
func (t *childTemplate) render(in Inputs, field string, params map[string]any) (*navarchv1.NestedGenerator, string, error) {
	tree, err := renderTree(in, t.tree, params)
	if err != nil {
		return nil, "", fmt.Errorf("%s: render with an earlier generator's parameters: %w", field, err)
	}
	raw, err := json.Marshal(tree)
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
