package templates

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// funcMap is sprig's text/template functions without those that read the environment or the
// network, plus Argo CD's ApplicationSet helpers, bounded (see boundedFuncs) but charging no
// Budget; a template rendered with a Budget gets the functions bound to it on top. It is
// built once per process and never modified afterwards.
var funcMap = sync.OnceValue(func() template.FuncMap {
	m := sprig.TxtFuncMap()
	for _, name := range []string{"env", "expandenv", "getHostByName"} {
		delete(m, name)
	}
	for name, f := range boundedFuncs(nil) {
		m[name] = f
	}
	return m
})

// maxNameLength is the longest DNS-1123 subdomain.
const maxNameLength = 253

// DefaultSlugLength is slugify's default maximum length.
const DefaultSlugLength = 50

// Normalize makes s usable as a Kubernetes object name (a DNS-1123 subdomain), like Argo CD's
// `normalize` template function and its `nameNormalized` parameters: it lowercases s, replaces
// every character other than a-z, 0-9, '-' and '.' by '-', cuts the result to 253 bytes and
// trims leading and trailing '-' and '.'.
func Normalize(s string) string {
	s = strings.ToLower(s)
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r == '-' || r == '.' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b = append(b, byte(r))
		} else {
			b = append(b, '-')
		}
	}
	if len(b) > maxNameLength {
		b = b[:maxNameLength]
	}
	return strings.Trim(string(b), "-.")
}

// Slugify makes a URL- and DNS-label-friendly slug of s, like Argo CD's `slugify` template
// function: Normalize, then '.' becomes '-', runs of '-' collapse into one, and leading and
// trailing '-' are trimmed. A maxLength > 0 caps the length: with smartTruncate the slug is cut
// after the last whole word (at a '-') that fits, otherwise at exactly maxLength bytes before
// the dashes are collapsed. A maxLength <= 0 means no limit.
func Slugify(s string, maxLength int, smartTruncate bool) string {
	s = Normalize(s)
	if !smartTruncate && maxLength > 0 && len(s) >= maxLength {
		s = s[:maxLength]
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '.' || c == '-' {
			if len(b) > 0 && b[len(b)-1] == '-' {
				continue
			}
			c = '-'
		}
		b = append(b, c)
	}
	slug := strings.Trim(string(b), "-")
	if smartTruncate && maxLength > 0 && len(slug) > maxLength {
		if i := strings.LastIndexByte(slug[:maxLength+1], '-'); i >= 0 {
			return slug[:i]
		}
		return slug[:maxLength]
	}
	return slug
}

// slugify is the `slugify` template function. As in Argo CD the name comes last, so it works
// in a pipeline: `slugify .branch`, `slugify 20 .branch`, `slugify 20 false .branch`,
// `.branch | slugify 20`. The optional arguments are the maximum length (default 50) and
// whether to truncate at a word boundary (default true); arguments between the second and
// the last are ignored, as Argo CD does.
func slugify(args ...any) (string, error) {
	maxLength, smart, name := DefaultSlugLength, true, ""
	for i, arg := range args {
		switch {
		case i == len(args)-1:
			s, ok := arg.(string)
			if !ok {
				return "", fmt.Errorf("slugify: the name (last argument) must be a string, got %T", arg)
			}
			name = s
		case i == 0:
			n, ok := asInt(arg)
			if !ok {
				return "", fmt.Errorf("slugify: the maximum length (first argument) must be an integer, got %T", arg)
			}
			maxLength = n
		case i == 1:
			b, ok := arg.(bool)
			if !ok {
				return "", fmt.Errorf("slugify: smart truncation (second argument) must be a boolean, got %T", arg)
			}
			smart = b
		}
	}
	if maxLength < 0 && !smart {
		return "", fmt.Errorf("slugify: the maximum length must not be negative, got %d", maxLength)
	}
	if maxLength == 0 && !smart {
		// Argo CD cuts to zero bytes in this case.
		return "", nil
	}
	return Slugify(name, maxLength, smart), nil
}

func asInt(v any) (int, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if rv.Uint() > uint64(^uint(0)>>1) {
			return 0, false
		}
		return int(rv.Uint()), true
	default:
		return 0, false
	}
}

// toYAML marshals v to YAML without the final newline.
func toYAML(v any) (string, error) {
	data, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// fromYAML parses a YAML mapping.
func fromYAML(s string) (map[string]any, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	return m, nil
}

// fromYAMLArray parses a YAML sequence.
func fromYAMLArray(s string) ([]any, error) {
	a := []any{}
	if err := yaml.Unmarshal([]byte(s), &a); err != nil {
		return nil, err
	}
	return a, nil
}
