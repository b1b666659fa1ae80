package templates

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	openTag  = "{{"
	closeTag = "}}"
)

// isFastTemplated reports whether fasttemplate mode processes s at all. Argo CD only substitutes
// in a string where one line holds a "{{" followed by a "}}"; any other string, including one
// whose only tag spans lines, is kept as it is.
func isFastTemplated(s string) bool {
	for {
		i := strings.Index(s, openTag)
		if i < 0 {
			return false
		}
		s = s[i+len(openTag):]
		nl := strings.IndexByte(s, '\n')
		if nl < 0 {
			return strings.Contains(s, closeTag)
		}
		if strings.Contains(s[:nl], closeTag) {
			return true
		}
		s = s[nl+1:]
	}
}

// fastText is a string compiled for fasttemplate mode: lits[0] tags[0] lits[1] ... lits[n].
type fastText struct {
	lits []string
	tags []fastTag
	// jlits are lits escaped for a JSON string, for rendering straight into JSON.
	jlits []string
	// validUTF8 says every literal is valid UTF-8, so pieces can be escaped one by one: an
	// invalid byte could otherwise join a parameter's bytes into a valid character.
	validUTF8 bool
}

type fastTag struct {
	// key is the tag with surrounding whitespace trimmed, the parameter name.
	key string
	// raw is the tag as written, braces included, output when key is unknown.
	raw string
	// jraw is raw escaped for a JSON string.
	jraw string
}

// compileFast splits s, for which isFastTemplated is true, into literals and tags.
func compileFast(s string) (*fastText, error) {
	t := &fastText{}
	pos := 0
	for {
		i := strings.Index(s[pos:], openTag)
		if i < 0 {
			t.lits = append(t.lits, s[pos:])
			break
		}
		start := pos + i
		t.lits = append(t.lits, s[pos:start])
		j := strings.Index(s[start+len(openTag):], closeTag)
		if j < 0 {
			return nil, errUnclosed(start)
		}
		end := start + len(openTag) + j + len(closeTag)
		raw := s[start:end]
		t.tags = append(t.tags, fastTag{
			key: strings.TrimSpace(raw[len(openTag) : len(raw)-len(closeTag)]),
			raw: raw,
		})
		pos = end
	}
	t.jlits = make([]string, len(t.lits))
	for i, l := range t.lits {
		t.jlits[i] = string(appendJSONEscaped(nil, l))
		t.validUTF8 = (i == 0 || t.validUTF8) && utf8.ValidString(l)
	}
	for i := range t.tags {
		t.validUTF8 = t.validUTF8 && utf8.ValidString(t.tags[i].raw)
		t.tags[i].jraw = string(appendJSONEscaped(nil, t.tags[i].raw))
	}
	return t, nil
}

func errUnclosed(offset int) error {
	return fmt.Errorf(`cannot find the closing "}}" of the "{{" at offset %d`, offset)
}

// lookupFast returns the replacement for a tag: the parameter's value, a string as is and any
// other non-nil value formatted with fmt. An empty tag, a missing key and a nil value are not
// replaced.
func lookupFast(params map[string]any, key string) (string, bool) {
	if key == "" {
		return "", false
	}
	v, ok := params[key]
	if !ok || v == nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case bool:
		return strconv.FormatBool(v), true
	case fmt.Stringer:
		return v.String(), true
	default:
		return fmt.Sprint(v), true
	}
}

// render returns the substituted string, or false when it would be longer than max bytes.
func (t *fastText) render(params map[string]any, max int) (string, bool) {
	var b strings.Builder
	n := len(t.lits[len(t.lits)-1])
	for i, tag := range t.tags {
		n += len(t.lits[i]) + len(tag.raw)
	}
	b.Grow(min(n, max))
	for i, tag := range t.tags {
		b.WriteString(t.lits[i])
		if v, ok := lookupFast(params, tag.key); ok {
			if len(v) > max-b.Len() {
				return "", false
			}
			b.WriteString(v)
		} else {
			b.WriteString(tag.raw)
		}
	}
	b.WriteString(t.lits[len(t.lits)-1])
	if b.Len() > max {
		return "", false
	}
	return b.String(), true
}

// appendJSON appends the substituted string, escaped for a JSON string, to dst, and returns
// the substituted string's length, or false when that would be more than max bytes.
func (t *fastText) appendJSON(dst []byte, params map[string]any, max int) ([]byte, int, bool) {
	if !t.validUTF8 || !t.valuesValidUTF8(params) {
		s, ok := t.render(params, max)
		if !ok {
			return dst, 0, false
		}
		return appendJSONEscaped(dst, s), len(s), true
	}
	n := len(t.lits[len(t.lits)-1])
	for i, tag := range t.tags {
		dst = append(dst, t.jlits[i]...)
		n += len(t.lits[i])
		if v, ok := lookupFast(params, tag.key); ok {
			if n += len(v); n > max {
				return dst, 0, false
			}
			dst = appendJSONEscaped(dst, v)
		} else {
			n += len(tag.raw)
			dst = append(dst, tag.jraw...)
		}
	}
	if n > max {
		return dst, 0, false
	}
	return append(dst, t.jlits[len(t.jlits)-1]...), n, true
}

func (t *fastText) valuesValidUTF8(params map[string]any) bool {
	for _, tag := range t.tags {
		if v, ok := lookupFast(params, tag.key); ok && !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

// renderFast substitutes s in one pass, without keeping a compiled form; the result may be
// at most max bytes.
func renderFast(s string, params map[string]any, max int) (string, error) {
	if !isFastTemplated(s) {
		return s, nil
	}
	var b strings.Builder
	b.Grow(min(len(s)+len(s)/2, max))
	pos := 0
	for {
		if b.Len() > max {
			return "", errFieldSize()
		}
		i := strings.Index(s[pos:], openTag)
		if i < 0 {
			if len(s)-pos > max-b.Len() {
				return "", errFieldSize()
			}
			b.WriteString(s[pos:])
			return b.String(), nil
		}
		start := pos + i
		b.WriteString(s[pos:start])
		j := strings.Index(s[start+len(openTag):], closeTag)
		if j < 0 {
			return "", errUnclosed(start)
		}
		end := start + len(openTag) + j + len(closeTag)
		raw := s[start:end]
		if v, ok := lookupFast(params, strings.TrimSpace(raw[len(openTag):len(raw)-len(closeTag)])); ok {
			if len(v) > max-b.Len() {
				return "", errFieldSize()
			}
			b.WriteString(v)
		} else {
			b.WriteString(raw)
		}
		pos = end
	}
}
