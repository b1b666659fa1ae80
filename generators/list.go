package generators

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// List is the list generator: one parameter set per element of `elements`, then one per item
// of `elementsYaml`. Each element's keys become parameters; in fasttemplate mode the objects of
// `elements` are flattened, so a `values` object is reachable as "values.x". (Argo CD rejects
// non-string element values in fasttemplate mode; they are formatted here instead, which
// changes nothing for sets Argo CD accepts.) The items of `elementsYaml` are appended as
// decoded, in both modes, as Argo CD appends them: a nested object stays one parameter holding
// a map, so fasttemplate's "values.x" does not reach into it.
type List struct {
	// Spec is the generator's spec.
	Spec *navarchv1.ListGenerator
	// Field is the spec's path, e.g. "spec.generators[0].list".
	Field string
}

func (g List) validate() error { return nil }

// RequeueAfter implements Generator: a list changes only with its ApplicationSet.
func (g List) RequeueAfter() time.Duration { return 0 }

// Params implements Generator.
func (g List) Params(_ context.Context, in Inputs) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(g.Spec.Elements))
	for i, el := range g.Spec.Elements {
		var obj map[string]any
		if err := json.Unmarshal(el.Raw, &obj); err != nil {
			return nil, fmt.Errorf("%s.elements[%d]: must be an object: %w", g.Field, i, err)
		}
		out = append(out, shapeObject(obj, in.GoTemplate))
	}
	if g.Spec.ElementsYaml != "" {
		items, err := decodeObjects([]byte(g.Spec.ElementsYaml), false)
		if err != nil {
			return nil, fmt.Errorf("%s.elementsYaml: %w", g.Field, err)
		}
		out = append(out, items...)
	}
	return out, nil
}

// shapeObject turns a decoded object into a parameter set of the mode's shape.
func shapeObject(obj map[string]any, goTemplate bool) map[string]any {
	if obj == nil {
		obj = map[string]any{}
	}
	if goTemplate {
		return obj
	}
	return flatParams(obj)
}

// decodeObjects decodes YAML or JSON holding one object or a list of objects (each becomes a
// parameter set). An empty document or null is one empty object when nullIsObject is set (a git
// file, as in Argo CD) and no object otherwise (elementsYaml).
func decodeObjects(data []byte, nullIsObject bool) ([]map[string]any, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, err
	}
	switch t := doc.(type) {
	case nil:
		if nullIsObject {
			return []map[string]any{{}}, nil
		}
		return nil, nil
	case map[string]any:
		return []map[string]any{t}, nil
	case []any:
		out := make([]map[string]any, 0, len(t))
		for i, item := range t {
			obj, ok := item.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("item %d: must be an object, not %s", i, jsonKind(item))
			}
			out = append(out, obj)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("must be an object or a list of objects, not %s", jsonKind(doc))
	}
}

// jsonKind names the JSON type of a decoded value for error messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
