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
	"sync"

	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// patchCacheSize and patchCacheBytes bound the decoded patches a Template keeps; when either
// is reached, the cache starts over. Rendered patches repeat a lot (one per environment, say),
// and parsing YAML is the expensive part of applying one. The bytes count the rendered patches
// and their JSON, which may be up to MaxFieldSize each.
const (
	patchCacheSize  = 256
	patchCacheBytes = 8 << 20
)

// patcher applies rendered templatePatches.
type patcher struct {
	text text
	meta strategicpatch.LookupPatchMeta
	// mergeKeys are the quoted JSON names whose presence in a patch needs the strategic merge;
	// see fast.
	mergeKeys [][]byte

	mu         sync.RWMutex
	cache      map[string]*decodedPatch
	cacheBytes int
}

// decodedPatch is a rendered patch converted to JSON.
type decodedPatch struct {
	// json is the patch as a JSON object; nil for an empty patch.
	json []byte
	// fast is true when decoding json onto the Application gives the same result as the
	// strategic merge: no nulls (deletions), no `$patch` directives, no lists with a merge
	// strategy and no free-form fields.
	fast bool
	err  error
}

func newPatcher(x text) (*patcher, error) {
	meta, err := strategicpatch.NewPatchMetaFromStruct(navarchv1.Application{})
	if err != nil {
		return nil, err
	}
	p := &patcher{text: x, meta: meta, cache: map[string]*decodedPatch{}}
	for _, name := range mergeSensitiveFields(reflect.TypeFor[navarchv1.Application]()) {
		p.mergeKeys = append(p.mergeKeys, []byte(strconv.Quote(name)))
	}
	return p, nil
}

// mergeSensitiveFields lists the JSON names of the fields of typ (recursively) for which a
// strategic merge differs from decoding a JSON document onto the typed value: lists with a
// patch strategy (metadata.finalizers, metadata.ownerReferences) and free-form values
// (runtime.RawExtension, apiextensionsv1.JSON, interfaces).
func mergeSensitiveFields(typ reflect.Type) []string {
	var names []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if name != "" && (f.Tag.Get("patchStrategy") != "" || ft == rawExtensionType || ft == apiextJSONType || ft.Kind() == reflect.Interface) {
				names = append(names, name)
				continue
			}
			walk(f.Type)
		}
	}
	walk(typ)
	slices.Sort(names)
	return slices.Compact(names)
}

// apply renders the templatePatch and merges it onto app with a strategic merge patch, as
// Argo CD does: maps merge, the Application spec's lists are replaced, metadata lists merge
// as their Kubernetes patch strategy says (finalizers are a set), null deletes, and `$patch`
// directives work. An empty patch (e.g. a Go template whose `if` is false for this set)
// changes nothing.
func (p *patcher) apply(app *navarchv1.Application, params map[string]any, s *scratch) (*navarchv1.Application, error) {
	src, err := p.text.render(params, &s.out)
	if err != nil {
		return nil, &FieldError{Field: fieldPatch, Err: err}
	}
	d := p.decode(src)
	if d.err != nil {
		return nil, &FieldError{Field: fieldPatch, Err: d.err}
	}
	if d.json == nil {
		return app, nil
	}
	if d.fast {
		if err := json.Unmarshal(d.json, app); err != nil {
			return nil, &FieldError{Field: fieldPatch, Err: fmt.Errorf("the patched Application is invalid: %w", err)}
		}
		app.TypeMeta = applicationTypeMeta
		return app, nil
	}
	return p.strategicMerge(app, d.json)
}

func (p *patcher) strategicMerge(app *navarchv1.Application, patchJSON []byte) (*navarchv1.Application, error) {
	patch, err := decodeJSONObject(patchJSON)
	if err != nil {
		return nil, &FieldError{Field: fieldPatch, Err: err}
	}
	data, err := json.Marshal(app)
	if err != nil {
		return nil, &FieldError{Field: fieldPatch, Err: fmt.Errorf("encode the Application: %w", err)}
	}
	original, err := decodeJSONObject(data)
	if err != nil {
		return nil, &FieldError{Field: fieldPatch, Err: fmt.Errorf("decode the Application: %w", err)}
	}
	merged, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(original, patch, p.meta)
	if err != nil {
		return nil, &FieldError{Field: fieldPatch, Err: err}
	}
	if data, err = json.Marshal(merged); err != nil {
		return nil, &FieldError{Field: fieldPatch, Err: err}
	}
	out := &navarchv1.Application{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, &FieldError{Field: fieldPatch, Err: fmt.Errorf("the patched Application is invalid: %w", err)}
	}
	out.TypeMeta = applicationTypeMeta
	return out, nil
}

// decode converts a rendered patch to JSON, through the cache.
func (p *patcher) decode(src string) *decodedPatch {
	p.mu.RLock()
	d, ok := p.cache[src]
	p.mu.RUnlock()
	if ok {
		return d
	}
	d = &decodedPatch{}
	d.json, d.err = patchToJSON(src)
	if d.json != nil {
		d.fast = !bytes.Contains(d.json, []byte("null")) && !bytes.Contains(d.json, []byte(`"$`))
		for _, k := range p.mergeKeys {
			if d.fast && bytes.Contains(d.json, k) {
				d.fast = false
			}
		}
	}
	size := len(src) + len(d.json)
	p.mu.Lock()
	if len(p.cache) >= patchCacheSize || p.cacheBytes+size > patchCacheBytes {
		clear(p.cache)
		p.cacheBytes = 0
	}
	p.cache[src] = d
	p.cacheBytes += size
	p.mu.Unlock()
	return d
}

// patchToJSON parses a rendered templatePatch, YAML or JSON, and returns it as a JSON object,
// or nil for an empty document. As in Argo CD, a patch starting with '{' is read as JSON.
func patchToJSON(src string) ([]byte, error) {
	trimmed := strings.TrimSpace(src)
	if trimmed == "" {
		return nil, nil
	}
	var data []byte
	if trimmed[0] == '{' {
		data = []byte(trimmed)
		if !json.Valid(data) {
			var v any
			err := json.Unmarshal(data, &v)
			return nil, fmt.Errorf("the rendered patch is not valid JSON: %w", err)
		}
	} else {
		var err error
		if data, err = yaml.YAMLToJSON([]byte(src)); err != nil {
			return nil, fmt.Errorf("the rendered patch is not valid YAML: %w", err)
		}
	}
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		return nil, nil
	case len(data) > 0 && data[0] == '{':
		return data, nil
	default:
		var v any
		_ = json.Unmarshal(data, &v)
		return nil, fmt.Errorf("the rendered patch must be a mapping, got %s", jsonKind(v))
	}
}

func decodeJSONObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not an object")
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
