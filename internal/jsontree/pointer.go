package jsontree

import (
	"fmt"
	"strconv"
	"strings"
)

// ParsePointer parses an RFC 6901 JSON pointer such as /metadata/labels/team~1owner into a
// path; every element of the result is a string (a list index stays a string of digits).
// The empty pointer, the whole document, gives an empty path.
func ParsePointer(p string) ([]any, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer: it must start with /", p)
	}
	tokens := strings.Split(p[1:], "/")
	path := make([]any, 0, len(tokens))
	for _, tok := range tokens {
		path = append(path, unescaper.Replace(tok))
	}
	return path, nil
}

// FormatPointer returns the RFC 6901 JSON pointer of path, escaping ~ and / in keys.
func FormatPointer(path []any) string {
	var b strings.Builder
	for _, seg := range path {
		b.WriteByte('/')
		switch s := seg.(type) {
		case string:
			b.WriteString(EscapeToken(s))
		case int:
			b.WriteString(strconv.Itoa(s))
		default:
			b.WriteString(EscapeToken(fmt.Sprint(s)))
		}
	}
	return b.String()
}

// EscapeToken escapes one reference token of a JSON pointer: ~ as ~0 and / as ~1.
func EscapeToken(s string) string { return escaper.Replace(s) }

var (
	escaper = strings.NewReplacer("~", "~0", "/", "~1")
	// unescaper decodes ~1 before ~0 as RFC 6901 requires, so ~01 is "~1", not "/"; a
	// Replacer scans left to right and never re-reads its output, which gives exactly that.
	unescaper = strings.NewReplacer("~1", "/", "~0", "~")
)
