package templates

import (
	"reflect"
	"time"
)

// What sizeOf counts besides the bytes of strings: about what the items of lists and the
// entries of maps take in memory, and a number or boolean.
const (
	itemSize   = 16
	entrySize  = 32
	scalarSize = 8
)

// sizeOf returns about how many bytes v takes, counting a value as often as v refers to it,
// as printing or encoding v would. It stops with a *LimitError once the count passes limit
// or v nests deeper than MaxDepth, which a map that contains itself does.
func sizeOf(v any, limit int) (int, error) {
	return sizeOfIndented(v, limit, 0)
}

// sizeOfIndented is sizeOf for an encoding that starts every item on a line of its own,
// indented by indent bytes per level of nesting (toPrettyJson, toYaml).
func sizeOfIndented(v any, limit, indent int) (int, error) {
	s := sizer{limit: limit, indent: indent}
	s.add(v, 0)
	return s.n, s.err
}

type sizer struct {
	n, limit, indent int
	err              error
}

// grow counts n bytes and reports whether to go on.
func (s *sizer) grow(n int) bool {
	s.n += n
	if s.n > s.limit {
		s.err = errValueSize("the value", -1)
		return false
	}
	return true
}

// item counts the overhead of one item of a list or map at depth.
func (s *sizer) item(overhead, depth int) bool {
	return s.grow(overhead + s.indent*depth)
}

func (s *sizer) add(v any, depth int) bool {
	if depth > MaxDepth {
		s.err = errDepth()
		return false
	}
	switch v := v.(type) {
	case nil, bool, int, int64, float64:
		return s.grow(scalarSize)
	case string:
		return s.grow(len(v))
	case []byte:
		return s.grow(len(v))
	case []int:
		for range v {
			if !s.item(itemSize+scalarSize, depth+1) {
				return false
			}
		}
		return true
	case []string:
		for _, e := range v {
			if !s.item(itemSize, depth+1) || !s.grow(len(e)) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !s.item(itemSize, depth+1) || !s.add(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for k, e := range v {
			if !s.item(entrySize+len(k), depth+1) || !s.add(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]string:
		for k, e := range v {
			if !s.item(entrySize+len(k)+len(e), depth+1) {
				return false
			}
		}
		return true
	case time.Time:
		return s.grow(64)
	}
	return s.addValue(reflect.ValueOf(v), depth)
}

// addValue is add for the types add does not know, through reflection.
func (s *sizer) addValue(v reflect.Value, depth int) bool {
	if depth > MaxDepth {
		s.err = errDepth()
		return false
	}
	switch v.Kind() {
	case reflect.Invalid:
		return s.grow(scalarSize)
	case reflect.String:
		return s.grow(v.Len())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return s.grow(scalarSize)
		}
		return s.addValue(v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return s.grow(v.Len())
		}
		for i := range v.Len() {
			if !s.item(itemSize, depth+1) || !s.addValue(v.Index(i), depth+1) {
				return false
			}
		}
		return true
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if !s.item(entrySize, depth+1) || !s.addValue(it.Key(), depth+1) || !s.addValue(it.Value(), depth+1) {
				return false
			}
		}
		return true
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return s.grow(64)
		}
		for i := range v.NumField() {
			if !s.addValue(v.Field(i), depth+1) {
				return false
			}
		}
		return true
	default:
		return s.grow(scalarSize)
	}
}
