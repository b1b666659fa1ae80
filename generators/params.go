package generators

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// This file shapes parameter sets: flattening to fasttemplate's dotted keys, formatting scalars,
// normalizing names, templating `values`, and combining the sets of several generators.

// flattenParams returns the fasttemplate view of a parameter set: nested maps become dotted
// keys ("a.b"), list items their index ("a.0"), scalars strings. A flat set is returned as is
// (with its values as strings). Empty maps and lists produce no key, as in Argo CD.
func flattenParams(set map[string]any) map[string]string {
	out := make(map[string]string, len(set))
	for k, v := range set {
		flattenInto(out, k, v)
	}
	return out
}

func flattenInto(out map[string]string, key string, v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, item := range t {
			flattenInto(out, key+"."+k, item)
		}
	case map[string]string:
		for k, item := range t {
			out[key+"."+k] = item
		}
	case []any:
		for i, item := range t {
			flattenInto(out, key+"."+strconv.Itoa(i), item)
		}
	case []string:
		for i, item := range t {
			out[key+"."+strconv.Itoa(i)] = item
		}
	default:
		out[key] = scalarString(v)
	}
}

// flatParams is flattenParams with any values, the shape of a fasttemplate parameter set.
func flatParams(set map[string]any) map[string]any {
	flat := flattenParams(set)
	out := make(map[string]any, len(flat))
	for k, v := range flat {
		out[k] = v
	}
	return out
}

// scalarString formats a decoded JSON/YAML scalar the way Argo CD does (fmt's %v), except that
// a whole number below 2^53 is written as an integer: Argo CD writes 1000000 as "1e+06",
// which no one wants in a resource name or a Helm value. null becomes "".
func scalarString(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return strconv.FormatFloat(t, 'f', -1, 64)
		}
		return fmt.Sprint(t)
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return scalarString(f)
		}
		return t.String()
	default:
		return fmt.Sprint(v)
	}
}

// normalizeName makes s a DNS-1123 subdomain the way Argo CD's `nameNormalized` and
// `basenameNormalized` do: lower-case, every character other than [-a-z0-9.] replaced by "-",
// at most 253 characters, no leading or trailing "-" or ".".
func normalizeName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	out := b.String()
	if len(out) > 253 {
		out = out[:253]
	}
	return strings.Trim(out, "-.")
}

// appendValues templates a generator's `values` with the set's own parameters and adds them
// as "values.<key>" (fasttemplate) or .values.<key> (goTemplate). Values see the parameters
// the generator produced, not each other. Inside a matrix they also see the earlier
// children's parameters (in.outer), which win as they do when the matrix combines the sets:
// Argo CD 3.5 renders a later child's values with the earlier child's parameters first and
// its own afterwards. subject names the set in errors (`cluster "prod"`).
func appendValues(in Inputs, field, subject string, values map[string]string, params map[string]any) error {
	if len(values) == 0 {
		return nil
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	scope := params
	if len(in.outer) > 0 {
		scope = mergeMaps(params, in.outer)
	}
	rendered := make(map[string]any, len(values))
	for _, k := range keys {
		v, err := in.render(values[k], scope)
		if err != nil {
			return fmt.Errorf("%s.values[%s]: %s: %w", field, k, subject, err)
		}
		rendered[k] = v
	}
	if in.GoTemplate {
		params["values"] = rendered
		return nil
	}
	for k, v := range rendered {
		params["values."+k] = v
	}
	return nil
}

// combineMatrix joins a parameter set of an earlier matrix child with one of a later child.
// fasttemplate: a key both define must have the same value (as in Argo CD; use pathParamPrefix
// to tell two git generators apart). goTemplate: nested maps are merged and the earlier child
// wins, as with Argo CD's mergo merge.
func combineMatrix(field string, earlier, later map[string]any, goTemplate bool) (map[string]any, error) {
	if goTemplate {
		return mergeMaps(later, earlier), nil
	}
	out := make(map[string]any, len(earlier)+len(later))
	maps.Copy(out, earlier)
	var conflicts []string
	for k, v := range later {
		if prev, ok := earlier[k]; ok && !reflect.DeepEqual(prev, v) {
			conflicts = append(conflicts, k)
		}
		out[k] = v
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		k := conflicts[0]
		return nil, fmt.Errorf("%s: parameter %q is %q in an earlier generator and %q here; a matrix cannot combine conflicting values (rename the key or set pathParamPrefix)",
			field, k, scalarString(earlier[k]), scalarString(later[k]))
	}
	return out, nil
}

// mergeMaps returns base with top laid over it: nested map[string]any values are merged key by
// key, anything else in top replaces base. Neither input is modified.
func mergeMaps(base, top map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(top))
	maps.Copy(out, base)
	for k, v := range top {
		bm, bok := out[k].(map[string]any)
		tm, tok := v.(map[string]any)
		if bok && tok {
			out[k] = mergeMaps(bm, tm)
			continue
		}
		out[k] = v
	}
	return out
}

// lookupParam finds key in a parameter set: the key itself first (fasttemplate's dotted keys),
// then, in goTemplate mode, a dotted path through nested maps.
func lookupParam(set map[string]any, key string, goTemplate bool) (any, bool) {
	if v, ok := set[key]; ok {
		return v, true
	}
	if !goTemplate || !strings.Contains(key, ".") {
		return nil, false
	}
	var cur any = set
	for _, part := range strings.Split(key, ".") {
		switch m := cur.(type) {
		case map[string]any:
			v, ok := m[part]
			if !ok {
				return nil, false
			}
			cur = v
		case map[string]string:
			v, ok := m[part]
			if !ok {
				return nil, false
			}
			cur = v
		default:
			return nil, false
		}
	}
	return cur, true
}

// isTemplated reports whether s may hold a template action. Both template modes start actions
// with "{{", so a string without it renders to itself.
func isTemplated(s string) bool {
	return strings.Contains(s, "{{")
}

// decodeStrict decodes JSON into v, rejecting unknown fields so a typo in a nested matrix or
// merge (kept as raw JSON, which the API server does not prune) is an error, not a silently
// ignored setting.
func decodeStrict(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return fmt.Errorf("must be an object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the object")
	}
	return nil
}
