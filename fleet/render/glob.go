package render

import (
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"
)

// glob is a compiled include or exclude pattern of a directory source.
//
// The syntax is Argo CD's: `*` matches any run of characters but "/", `**` any run including
// "/", `?` one character but "/", `[abc]`, `[a-z]` and `[!abc]` (or `[^abc]`) one character of
// a class, `{a,b}` any one of the comma-separated alternatives (which may nest and hold
// wildcards), and `\` makes the next character literal. A pattern matches a whole path.
//
// Patterns are translated to a regular expression, so matching takes linear time whatever the
// pattern.
type glob struct {
	re *regexp.Regexp
}

// errBadGlob reports a pattern that cannot be compiled.
var errBadGlob = errors.New("syntax error in pattern")

// compileGlob compiles pattern. The empty pattern matches nothing.
func compileGlob(pattern string) (*glob, error) {
	var b strings.Builder
	b.WriteString(`^`)
	depth := 0
	for i := 0; i < len(pattern); {
		r, size := utf8.DecodeRuneInString(pattern[i:])
		if r == utf8.RuneError && size == 1 {
			return nil, errors.New("pattern is not valid UTF-8")
		}
		i += size
		switch r {
		case '\\':
			if i >= len(pattern) {
				return nil, errBadGlob
			}
			esc, size := utf8.DecodeRuneInString(pattern[i:])
			i += size
			b.WriteString(regexp.QuoteMeta(string(esc)))
		case '*':
			if strings.HasPrefix(pattern[i:], "*") {
				for strings.HasPrefix(pattern[i:], "*") {
					i++
				}
				b.WriteString(`.*`)
			} else {
				b.WriteString(`[^/]*`)
			}
		case '?':
			b.WriteString(`[^/]`)
		case '[':
			n, err := writeClass(&b, pattern[i:])
			if err != nil {
				return nil, err
			}
			i += n
		case '{':
			depth++
			b.WriteString(`(?:`)
		case ',':
			if depth > 0 {
				b.WriteString(`|`)
			} else {
				b.WriteString(`,`)
			}
		case '}':
			if depth == 0 {
				b.WriteString(`\}`)
				continue
			}
			depth--
			b.WriteString(`)`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	if depth != 0 {
		return nil, errors.New("unclosed '{' in pattern")
	}
	b.WriteString(`$`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		// Only a reversed range such as [z-a] gets here.
		return nil, errBadGlob
	}
	return &glob{re: re}, nil
}

// writeClass translates the character class that starts after a '[' in rest, up to and
// including its ']', and returns how many bytes of rest it used.
func writeClass(b *strings.Builder, rest string) (int, error) {
	i := 0
	b.WriteString(`[`)
	if strings.HasPrefix(rest, "!") || strings.HasPrefix(rest, "^") {
		// As in path.Match, a negated class never matches the separator.
		b.WriteString(`^/`)
		i++
	}
	first := true
	for {
		if i >= len(rest) {
			return 0, errors.New("unclosed '[' in pattern")
		}
		r, size := utf8.DecodeRuneInString(rest[i:])
		if r == utf8.RuneError && size == 1 {
			return 0, errors.New("pattern is not valid UTF-8")
		}
		i += size
		switch {
		case r == ']' && !first:
			b.WriteString(`]`)
			return i, nil
		case r == '\\':
			if i >= len(rest) {
				return 0, errBadGlob
			}
			esc, size := utf8.DecodeRuneInString(rest[i:])
			i += size
			b.WriteString(`\x{` + hexRune(esc) + `}`)
		case r == '-' && !first && i < len(rest) && rest[i] != ']':
			b.WriteString(`-`)
		default:
			b.WriteString(`\x{` + hexRune(r) + `}`)
		}
		first = false
	}
}

func hexRune(r rune) string {
	const digits = "0123456789abcdef"
	if r == 0 {
		return "0"
	}
	var buf [8]byte
	n := len(buf)
	for r > 0 {
		n--
		buf[n] = digits[r&0xf]
		r >>= 4
	}
	return string(buf[n:])
}

// match reports whether the slash-separated path p matches the whole pattern.
func (g *glob) match(p string) bool { return g.re.MatchString(p) }
