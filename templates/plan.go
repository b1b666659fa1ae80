package templates

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// setter renders the templated strings of one value of a deep copy of the template, in place.
// Setters exist only for the parts of the template that hold templated strings, so rendering
// touches nothing else.
type setter func(dst reflect.Value, params map[string]any, o *output) error

// errUnsupported makes compileSpec fall back to the JSON program: the value holds templated
// strings in a shape the setters do not handle (today's API has none).
var errUnsupported = errors.New("unsupported shape")

var (
	rawExtensionType = reflect.TypeFor[runtime.RawExtension]()
	apiextJSONType   = reflect.TypeFor[apiextensionsv1.JSON]()
)

// planBuilder builds the setters of a typed value.
type planBuilder struct {
	c *compiler
}

// build returns the setter of v, or nil when v holds nothing to template.
func (b *planBuilder) build(v reflect.Value, path string) (setter, error) {
	switch v.Kind() {
	case reflect.String:
		t, err := b.c.text(v.String())
		if err != nil {
			return nil, &FieldError{Field: path, Err: err}
		}
		if !t.templated() {
			return nil, nil
		}
		return func(dst reflect.Value, params map[string]any, o *output) error {
			s, err := t.render(params, o)
			if err != nil {
				return &FieldError{Field: path, Err: err}
			}
			dst.SetString(s)
			return nil
		}, nil

	case reflect.Pointer:
		if v.IsNil() {
			return nil, nil
		}
		inner, err := b.build(v.Elem(), path)
		if inner == nil || err != nil {
			return nil, err
		}
		return func(dst reflect.Value, params map[string]any, o *output) error {
			return inner(dst.Elem(), params, o)
		}, nil

	case reflect.Struct:
		if v.Type() == rawExtensionType || v.Type() == apiextJSONType {
			return b.buildRaw(v.FieldByName("Raw").Bytes(), path)
		}
		type fieldSetter struct {
			index int
			set   setter
		}
		var fields []fieldSetter
		typ := v.Type()
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			childPath := path
			if !f.Anonymous || name != "" {
				if name == "" {
					name = f.Name
				}
				childPath = path + "." + name
			}
			set, err := b.build(v.Field(i), childPath)
			if err != nil {
				return nil, err
			}
			if set != nil {
				fields = append(fields, fieldSetter{i, set})
			}
		}
		if fields == nil {
			return nil, nil
		}
		return func(dst reflect.Value, params map[string]any, o *output) error {
			for _, f := range fields {
				if err := f.set(dst.Field(f.index), params, o); err != nil {
					return err
				}
			}
			return nil
		}, nil

	case reflect.Slice, reflect.Array:
		type elemSetter struct {
			index int
			set   setter
		}
		var elems []elemSetter
		for i := range v.Len() {
			set, err := b.build(v.Index(i), path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			if set != nil {
				elems = append(elems, elemSetter{i, set})
			}
		}
		if elems == nil {
			return nil, nil
		}
		return func(dst reflect.Value, params map[string]any, o *output) error {
			for _, e := range elems {
				if err := e.set(dst.Index(e.index), params, o); err != nil {
					return err
				}
			}
			return nil
		}, nil

	case reflect.Map:
		return b.buildMap(v, path)

	case reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return nil, errUnsupported

	default:
		return nil, nil
	}
}

// buildMap handles maps with string keys; keys and string values are templated. A templated
// map is rebuilt whole, since map values cannot be set in place.
func (b *planBuilder) buildMap(v reflect.Value, path string) (setter, error) {
	typ := v.Type()
	if typ.Key().Kind() != reflect.String {
		return nil, errUnsupported
	}
	if v.IsNil() {
		return nil, nil
	}
	keys := make([]string, 0, v.Len())
	for _, k := range v.MapKeys() {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	type mapEntry struct {
		field      string
		rawKey     reflect.Value
		key, value text
		// stringValue is set when the values are strings, whose text is value.
		stringValue bool
	}
	entries := make([]mapEntry, 0, len(keys))
	templated := false
	for _, k := range keys {
		rawKey := reflect.ValueOf(k).Convert(typ.Key())
		e := mapEntry{field: path + "[" + k + "]", rawKey: rawKey}
		var err error
		if e.key, err = b.c.text(k); err != nil {
			return nil, &FieldError{Field: e.field, Err: err}
		}
		val := v.MapIndex(rawKey)
		if typ.Elem().Kind() == reflect.String {
			e.stringValue = true
			if e.value, err = b.c.text(val.String()); err != nil {
				return nil, &FieldError{Field: e.field, Err: err}
			}
		} else if set, err := b.build(val, e.field); err != nil {
			return nil, err
		} else if set != nil {
			return nil, errUnsupported
		}
		templated = templated || e.key.templated() || e.value.templated()
		entries = append(entries, e)
	}
	if !templated {
		return nil, nil
	}
	return func(dst reflect.Value, params map[string]any, o *output) error {
		out := reflect.MakeMapWithSize(typ, len(entries))
		for i := range entries {
			e := &entries[i]
			k, err := e.key.render(params, o)
			if err != nil {
				return &FieldError{Field: e.field, Err: err}
			}
			var val reflect.Value
			if e.stringValue {
				s, err := e.value.render(params, o)
				if err != nil {
					return &FieldError{Field: e.field, Err: err}
				}
				val = reflect.ValueOf(s).Convert(typ.Elem())
			} else {
				val = dst.MapIndex(e.rawKey)
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(typ.Key()), val)
		}
		dst.Set(out)
		return nil
	}, nil
}

// buildRaw handles free-form JSON (Helm valuesObject): its strings and keys are templated
// through a JSON program and the result re-encoded, as Argo CD does.
func (b *planBuilder) buildRaw(raw []byte, path string) (setter, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !json.Valid(raw) {
		// Not JSON: leave it alone, the API server would not have accepted it anyway.
		return nil, nil
	}
	tree, err := decodeJSON(raw)
	if err != nil {
		return nil, &FieldError{Field: path, Err: err}
	}
	sb := &specBuilder{c: b.c, fields: map[reflect.Type]map[string]reflect.Type{}}
	if err := sb.value(tree, nil, path); err != nil {
		return nil, err
	}
	sb.flush()
	prog := &specProgram{chunks: sb.chunks, size: sb.size}
	if prog.static() {
		return nil, nil
	}
	return func(dst reflect.Value, params map[string]any, o *output) error {
		out, err := prog.appendJSON(make([]byte, 0, prog.size*2), params, o)
		if err != nil {
			return err
		}
		// Re-encode, as Argo CD does: keys sorted after templating, one value per key.
		tree, err := decodeJSON(out)
		if err != nil {
			return &FieldError{Field: path, Err: err}
		}
		if out, err = json.Marshal(tree); err != nil {
			return &FieldError{Field: path, Err: err}
		}
		dst.FieldByName("Raw").SetBytes(out)
		return nil
	}, nil
}

// decodeJSON decodes a JSON document, keeping numbers as written.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
