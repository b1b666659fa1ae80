package templates

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// specProgram renders a JSON document: at Compile time the document is cut into literal JSON
// chunks and templated strings (values and map keys), and rendering appends the chunks and the
// rendered strings. It renders free-form JSON (Helm valuesObject), and a whole Application spec
// when the setters cannot (decoding the result is the slow part, see specRenderer).
type specProgram struct {
	chunks []specChunk
	// size is the length of the literal chunks, a capacity hint for the output.
	size int
}

type specChunk struct {
	// lit is literal JSON, used when txt is nil.
	lit string
	// txt is a templated string, output as a JSON string.
	txt *text
	// field is txt's path, for errors.
	field string
}

// static reports whether the spec has nothing to render.
func (p *specProgram) static() bool {
	return len(p.chunks) <= 1 && (len(p.chunks) == 0 || p.chunks[0].txt == nil)
}

func (p *specProgram) appendJSON(dst []byte, params map[string]any, o *output) ([]byte, error) {
	for i := range p.chunks {
		ch := &p.chunks[i]
		if ch.txt == nil {
			dst = append(dst, ch.lit...)
			continue
		}
		dst = append(dst, '"')
		var err error
		if dst, err = ch.txt.appendJSON(dst, params, o); err != nil {
			return dst, &FieldError{Field: ch.field, Err: err}
		}
		dst = append(dst, '"')
	}
	return dst, nil
}

// specRenderer renders the spec of an Application in place.
type specRenderer struct {
	// set renders a deep copy of the template's spec in place; nil when nothing is templated.
	set setter
	// program is used instead of set when the spec has a shape set does not handle.
	program *specProgram
}

// compileSpec compiles the templated strings of spec; field paths start at path. It prefers
// setters, which render a deep copy of the spec in place, and falls back to a JSON program.
func compileSpec(c *compiler, spec *navarchv1.ApplicationSpec, path string) (specRenderer, error) {
	set, err := (&planBuilder{c: c}).build(reflect.ValueOf(spec).Elem(), path)
	if err == nil {
		return specRenderer{set: set}, nil
	}
	if !errors.Is(err, errUnsupported) {
		return specRenderer{}, err
	}
	prog, err := compileSpecJSON(c, spec, path)
	if err != nil {
		return specRenderer{}, err
	}
	return specRenderer{program: prog}, nil
}

// compileSpecJSON builds the JSON program of spec.
func compileSpecJSON(c *compiler, spec *navarchv1.ApplicationSpec, path string) (*specProgram, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode the template spec: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("decode the template spec: %w", err)
	}
	b := &specBuilder{c: c, fields: map[reflect.Type]map[string]reflect.Type{}}
	if err := b.value(tree, reflect.TypeFor[navarchv1.ApplicationSpec](), path); err != nil {
		return nil, err
	}
	b.flush()
	return &specProgram{chunks: b.chunks, size: b.size}, nil
}

// render renders the spec of src for params into dst.
func (r *specRenderer) render(dst, src *navarchv1.ApplicationSpec, params map[string]any, s *scratch) error {
	if r.program == nil {
		src.DeepCopyInto(dst)
		if r.set == nil {
			return nil
		}
		return r.set(reflect.ValueOf(dst).Elem(), params, &s.out)
	}
	if cap(s.json) < r.program.size*2 {
		s.json = make([]byte, 0, r.program.size*2)
	}
	var err error
	if s.json, err = r.program.appendJSON(s.json[:0], params, &s.out); err != nil {
		return err
	}
	if err := json.Unmarshal(s.json, dst); err != nil {
		return &FieldError{Field: fieldSpec, Err: err}
	}
	return nil
}

type specBuilder struct {
	c      *compiler
	chunks []specChunk
	lit    []byte
	size   int
	// fields caches the JSON field names of struct types.
	fields map[reflect.Type]map[string]reflect.Type
}

func (b *specBuilder) flush() {
	if len(b.lit) > 0 {
		b.chunks = append(b.chunks, specChunk{lit: string(b.lit)})
		b.size += len(b.lit)
		b.lit = b.lit[:0]
	}
}

func (b *specBuilder) str(s, path string) error {
	t, err := b.c.text(s)
	if err != nil {
		return &FieldError{Field: path, Err: err}
	}
	if !t.templated() {
		b.lit = append(b.lit, '"')
		b.lit = appendJSONEscaped(b.lit, s)
		b.lit = append(b.lit, '"')
		return nil
	}
	b.flush()
	b.chunks = append(b.chunks, specChunk{txt: &t, field: path})
	b.size += len(s) + 2
	return nil
}

func (b *specBuilder) value(v any, typ reflect.Type, path string) error {
	for typ != nil && typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch v := v.(type) {
	case nil:
		b.lit = append(b.lit, "null"...)
	case bool:
		b.lit = strconv.AppendBool(b.lit, v)
	case json.Number:
		b.lit = append(b.lit, v...)
	case string:
		return b.str(v, path)
	case []any:
		var elem reflect.Type
		if typ != nil && (typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array) {
			elem = typ.Elem()
		}
		b.lit = append(b.lit, '[')
		for i, e := range v {
			if i > 0 {
				b.lit = append(b.lit, ',')
			}
			if err := b.value(e, elem, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		b.lit = append(b.lit, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.lit = append(b.lit, '{')
		for i, k := range keys {
			if i > 0 {
				b.lit = append(b.lit, ',')
			}
			child, childPath := b.child(typ, path, k)
			if err := b.str(k, childPath); err != nil {
				return err
			}
			b.lit = append(b.lit, ':')
			if err := b.value(v[k], child, childPath); err != nil {
				return err
			}
		}
		b.lit = append(b.lit, '}')
	default:
		return fmt.Errorf("%s: unexpected JSON value %T", path, v)
	}
	return nil
}

// child returns the Go type of key inside a value of type typ (nil when unknown, as inside
// free-form JSON) and the field path of key: `a.b` for a struct field, `a[b]` for a map key.
func (b *specBuilder) child(typ reflect.Type, path, key string) (reflect.Type, string) {
	if typ != nil {
		switch typ.Kind() {
		case reflect.Struct:
			if t, ok := b.structFields(typ)[key]; ok {
				return t, path + "." + key
			}
		case reflect.Map:
			return typ.Elem(), path + "[" + key + "]"
		}
	}
	if isIdentifier(key) {
		return nil, path + "." + key
	}
	return nil, path + "[" + key + "]"
}

// structFields maps the JSON names of typ's fields, inlined fields included, to their types.
func (b *specBuilder) structFields(typ reflect.Type) map[string]reflect.Type {
	if m, ok := b.fields[typ]; ok {
		return m
	}
	m := map[string]reflect.Type{}
	b.fields[typ] = m
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" && opts == "" {
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
				add(ft)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			m[name] = f.Type
		}
	}
	add(typ)
	return m
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
