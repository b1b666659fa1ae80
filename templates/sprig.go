package templates

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// The template functions below replace sprig's (and text/template's print, printf, println,
// html, js and urlquery) with bounded ones. Every function that makes a value:
//
//   - refuses, before it allocates, a result that would take more than MaxValueSize when its
//     size follows from its arguments (repeat, until, indent, replace, join, printf, ...);
//   - refuses arguments that add up to more than MaxValueSize when it copies them all into
//     its result (cat, concat, toJson, print, ...);
//   - refuses a result larger than MaxValueSize, so that no variable holds more;
//   - charges its result to the Budget, so that a template cannot keep many of them alive.
//
// Functions that can take long (key and certificate generation, bcrypt, derivePassword,
// random strings, regular expressions) check the Budget's time first; regular expressions
// are also refused when the expression is large for the input (MaxRegexpWork). The
// functions not replaced here return a constant-size value, a part of an argument (trunc,
// first, get, ...) or a number, or fail.
//
// With a nil *Budget nothing is charged and the time is not checked; the other limits hold.

// Derived limits: the items of the longest list of strings, and of numbers, within
// MaxValueSize as sizeOf counts them.
const (
	maxItems = MaxValueSize / itemSize
	maxInts  = MaxValueSize / (itemSize + scalarSize)
)

// boundedFuncs returns the bounded template functions, charging b.
func boundedFuncs(b *Budget) template.FuncMap {
	s := sprig.TxtFuncMap()
	m := template.FuncMap{}

	// Strings made from one string, a few times larger at most.
	for _, name := range []string{"upper", "lower", "title", "untitle", "swapcase", "shuffle", "snakecase",
		"camelcase", "kebabcase", "nospace", "initials", "b64enc", "b64dec", "b32enc", "b32dec", "clean", "dir",
		"osClean", "osDir"} {
		m[name] = madeString1(b, s[name].(func(string) string))
	}
	m["normalize"] = madeString1(b, Normalize)
	for _, name := range []string{"abbrev", "wrap"} {
		f := s[name].(func(int, string) string)
		m[name] = func(n int, str string) (string, error) { return b.madeString(f(n, str)) }
	}
	abbrevboth := s["abbrevboth"].(func(int, int, string) string)
	m["abbrevboth"] = func(l, r int, str string) (string, error) { return b.madeString(abbrevboth(l, r, str)) }
	date := s["date"].(func(string, any) string)
	m["date"] = func(layout string, t any) (string, error) { return b.madeString(date(layout, t)) }
	dateInZone := s["dateInZone"].(func(string, any, string) string)
	m["dateInZone"] = func(layout string, t any, zone string) (string, error) {
		return b.madeString(dateInZone(layout, t, zone))
	}
	m["date_in_zone"] = m["dateInZone"]
	for _, name := range []string{"encryptAES", "decryptAES"} {
		f := s[name].(func(string, string) (string, error))
		m[name] = func(key, text string) (string, error) {
			r, err := f(key, text)
			if err != nil {
				return "", err
			}
			return b.madeString(r)
		}
	}
	m["slugify"] = func(args ...any) (string, error) {
		r, err := slugify(args...)
		if err != nil {
			return "", err
		}
		return b.madeString(r)
	}

	// Lists and maps built from the arguments or copied from one.
	for _, name := range []string{"list", "tuple"} {
		m[name] = madeVariadic(b, s[name].(func(...any) []any))
	}
	m["dict"] = madeVariadic(b, s["dict"].(func(...any) map[string]any))
	for _, name := range []string{"compact", "rest", "initial", "reverse"} {
		m[name] = made1(b, s[name].(func(any) []any))
		must := "must" + strings.ToUpper(name[:1]) + name[1:]
		m[must] = made1E(b, s[must].(func(any) ([]any, error)))
	}
	for _, name := range []string{"append", "push", "prepend"} {
		m[name] = made2(b, s[name].(func(any, any) []any))
	}
	for _, name := range []string{"mustAppend", "mustPush", "mustPrepend"} {
		m[name] = made2E(b, s[name].(func(any, any) ([]any, error)))
	}
	without := s["without"].(func(any, ...any) []any)
	m["without"] = func(list any, omit ...any) ([]any, error) { return made(b, without(list, omit...)) }
	mustWithout := s["mustWithout"].(func(any, ...any) ([]any, error))
	m["mustWithout"] = func(list any, omit ...any) ([]any, error) {
		r, err := mustWithout(list, omit...)
		if err != nil {
			return nil, err
		}
		return made(b, r)
	}
	m["fromJson"] = made1(b, s["fromJson"].(func(string) any))
	m["mustFromJson"] = made1E(b, s["mustFromJson"].(func(string) (any, error)))
	m["fromYaml"] = made1E(b, fromYAML)
	m["fromYamlArray"] = made1E(b, fromYAMLArray)
	m["deepCopy"] = made1(b, s["deepCopy"].(func(any) any))
	m["mustDeepCopy"] = made1E(b, s["mustDeepCopy"].(func(any) (any, error)))
	pluck := s["pluck"].(func(string, ...map[string]any) []any)
	m["pluck"] = func(key string, dicts ...map[string]any) ([]any, error) { return made(b, pluck(key, dicts...)) }
	for _, name := range []string{"pick", "omit"} {
		f := s[name].(func(map[string]any, ...string) map[string]any)
		m[name] = func(d map[string]any, keys ...string) (map[string]any, error) { return made(b, f(d, keys...)) }
	}
	m["values"] = made1(b, s["values"].(func(map[string]any) []any))
	m["chunk"] = made2(b, s["chunk"].(func(int, any) [][]any))
	m["mustChunk"] = made2E(b, s["mustChunk"].(func(int, any) ([][]any, error)))
	m["urlParse"] = made1(b, s["urlParse"].(func(string) map[string]any))
	m["urlJoin"] = made1(b, s["urlJoin"].(func(map[string]any) string))
	m["uniq"] = made1E(b, uniq)
	m["mustUniq"] = m["uniq"]

	// Results whose size follows from the arguments, checked before they are made.
	m["repeat"] = b.repeat
	m["indent"] = func(spaces int, str string) (string, error) { return b.indent(spaces, str, "") }
	m["nindent"] = func(spaces int, str string) (string, error) { return b.indent(spaces, str, "\n") }
	m["replace"] = b.replace
	wrapWith := s["wrapWith"].(func(int, string, string) string)
	m["wrapWith"] = func(width int, sep, str string) (string, error) {
		lines := strings.Count(str, " ") + len(str)/max(width, 1) + 1
		if err := checkSize(int64(len(str)) + int64(lines)*int64(max(len(sep), 1))); err != nil {
			return "", err
		}
		return b.madeString(wrapWith(width, sep, str))
	}
	split := s["split"].(func(string, string) map[string]string)
	m["split"] = func(sep, str string) (map[string]string, error) {
		if err := checkParts(str, sep, -1, entrySize+8); err != nil {
			return nil, err
		}
		return made(b, split(sep, str))
	}
	splitn := s["splitn"].(func(string, int, string) map[string]string)
	m["splitn"] = func(sep string, n int, str string) (map[string]string, error) {
		if err := checkParts(str, sep, n, entrySize+8); err != nil {
			return nil, err
		}
		return made(b, splitn(sep, n, str))
	}
	m["splitList"] = func(sep, str string) ([]string, error) {
		if err := checkParts(str, sep, -1, itemSize); err != nil {
			return nil, err
		}
		return made(b, strings.Split(str, sep))
	}
	m["until"] = func(count int) ([]int, error) {
		step := 1
		if count < 0 {
			step = -1
		}
		return b.ints(untilStep(0, count, step))
	}
	m["untilStep"] = func(start, stop, step int) ([]int, error) { return b.ints(untilStep(start, stop, step)) }
	m["seq"] = func(params ...int) (string, error) {
		r, err := seq(params...)
		if err != nil {
			return "", err
		}
		return b.madeString(r)
	}
	randBytes := s["randBytes"].(func(int) (string, error))
	m["randBytes"] = func(count int) (string, error) {
		if err := checkSize(int64(count)/3*4 + 4); err != nil {
			return "", err
		}
		if err := b.checkTime(); err != nil {
			return "", err
		}
		r, err := randBytes(count)
		if err != nil {
			return "", err
		}
		return b.madeString(r)
	}
	for _, name := range []string{"randAlpha", "randAlphaNum", "randAscii", "randNumeric"} {
		f := s[name].(func(int) string)
		m[name] = func(count int) (string, error) {
			if count > MaxRandomLength {
				return "", &LimitError{Limit: LimitRandomLength, Max: MaxRandomLength,
					msg: fmt.Sprintf("%d random characters are over the limit of %d", count, MaxRandomLength)}
			}
			if err := b.checkTime(); err != nil {
				return "", err
			}
			return b.madeString(f(count))
		}
	}

	// Results that hold all the arguments, maybe escaped: the arguments are checked first.
	join := s["join"].(func(string, any) string)
	m["join"] = func(sep string, list any) (string, error) {
		n, err := sizeOf(list, MaxValueSize)
		if err != nil {
			return "", err
		}
		if err := checkSize(int64(n) + int64(len(sep))*int64(length(list))); err != nil {
			return "", err
		}
		return b.madeString(join(sep, list))
	}
	for _, name := range []string{"cat", "quote", "squote"} {
		f := s[name].(func(...any) string)
		m[name] = func(args ...any) (string, error) {
			if err := checkArgs(args, 3); err != nil {
				return "", err
			}
			return b.madeString(f(args...))
		}
	}
	m["print"] = formatter(b, fmt.Sprint)
	m["println"] = formatter(b, fmt.Sprintln)
	m["html"] = formatter(b, template.HTMLEscaper)
	m["js"] = formatter(b, template.JSEscaper)
	m["urlquery"] = formatter(b, template.URLQueryEscaper)
	m["printf"] = func(format string, args ...any) (string, error) {
		if err := checkPrintf(format, args); err != nil {
			return "", err
		}
		return b.madeString(fmt.Sprintf(format, args...))
	}
	for _, name := range []string{"toString", "toJson", "toRawJson"} {
		m[name] = encoder(b, s[name].(func(any) string), 0)
	}
	m["toPrettyJson"] = encoder(b, s["toPrettyJson"].(func(any) string), 2)
	for _, name := range []string{"mustToJson", "mustToRawJson", "mustToPrettyJson"} {
		f := s[name].(func(any) (string, error))
		indent := 0
		if name == "mustToPrettyJson" {
			indent = 2
		}
		m[name] = func(v any) (string, error) {
			if _, err := sizeOfIndented(v, MaxValueSize, indent); err != nil {
				return "", err
			}
			r, err := f(v)
			if err != nil {
				return "", err
			}
			return b.madeString(r)
		}
	}
	m["toYaml"] = func(v any) (string, error) {
		if _, err := sizeOfIndented(v, MaxValueSize, 2); err != nil {
			return "", err
		}
		r, err := toYAML(v)
		if err != nil {
			return "", err
		}
		return b.madeString(r)
	}
	for _, name := range []string{"toStrings", "sortAlpha"} {
		f := s[name].(func(any) []string)
		m[name] = func(v any) ([]string, error) {
			if _, err := sizeOf(v, MaxValueSize); err != nil {
				return nil, err
			}
			return made(b, f(v))
		}
	}
	concat := s["concat"].(func(...any) any)
	m["concat"] = func(lists ...any) (any, error) {
		if err := checkArgs(lists, 0); err != nil {
			return nil, err
		}
		return made(b, concat(lists...))
	}
	keys := s["keys"].(func(...map[string]any) []string)
	m["keys"] = func(dicts ...map[string]any) ([]string, error) {
		var n int64
		for _, d := range dicts {
			for k := range d {
				n += int64(itemSize + len(k))
			}
		}
		if err := checkSize(n); err != nil {
			return nil, err
		}
		return made(b, keys(dicts...))
	}

	// Functions that change a map: what they store is checked and charged, and so is the map.
	m["set"] = func(d map[string]any, key string, value any) (map[string]any, error) {
		n, err := sizeOf(value, MaxValueSize)
		if err != nil {
			return nil, err
		}
		d[key] = value
		if _, err := sizeOf(d, MaxValueSize); err != nil {
			return nil, err
		}
		return d, b.charge(n + entrySize + len(key))
	}
	for _, name := range []string{"merge", "mergeOverwrite"} {
		f := s[name].(func(map[string]any, ...map[string]any) any)
		m[name] = func(dst map[string]any, srcs ...map[string]any) (any, error) {
			return b.merge(dst, srcs, func() (any, error) { return f(dst, srcs...), nil })
		}
	}
	for _, name := range []string{"mustMerge", "mustMergeOverwrite"} {
		f := s[name].(func(map[string]any, ...map[string]any) (any, error))
		m[name] = func(dst map[string]any, srcs ...map[string]any) (any, error) {
			return b.merge(dst, srcs, func() (any, error) { return f(dst, srcs...) })
		}
	}

	// Functions that take long for their input.
	for _, name := range []string{"bcrypt", "htpasswd", "genPrivateKey", "derivePassword", "buildCustomCert",
		"genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey"} {
		m[name] = slow(b, s[name])
	}
	for name, f := range b.regexpFuncs() {
		m[name] = f
	}

	// The check of printed values, see addGuards.
	m[guardFunc] = func(v any) (string, error) {
		if _, err := sizeOf(v, MaxFieldSize); err != nil {
			return "", errFieldSize()
		}
		return "", nil
	}
	return m
}

// ints checks and charges a list of numbers a function made.
func (b *Budget) ints(v []int, err error) ([]int, error) {
	if err != nil {
		return nil, err
	}
	return made(b, v)
}

// madeString checks and charges a string a function made.
func (b *Budget) madeString(s string) (string, error) {
	if len(s) > MaxValueSize {
		return "", errValueSize("the result", int64(len(s)))
	}
	return s, b.charge(len(s))
}

// made checks and charges a value a function made.
func made[T any](b *Budget, v T) (T, error) {
	n, err := sizeOf(v, MaxValueSize)
	if err == nil {
		err = b.charge(n)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

func madeString1(b *Budget, f func(string) string) func(string) (string, error) {
	return func(s string) (string, error) { return b.madeString(f(s)) }
}

func made1[A, R any](b *Budget, f func(A) R) func(A) (R, error) {
	return func(a A) (R, error) { return made(b, f(a)) }
}

func made1E[A, R any](b *Budget, f func(A) (R, error)) func(A) (R, error) {
	return func(a A) (R, error) {
		r, err := f(a)
		if err != nil {
			return r, err
		}
		return made(b, r)
	}
}

func made2[A1, A2, R any](b *Budget, f func(A1, A2) R) func(A1, A2) (R, error) {
	return func(a1 A1, a2 A2) (R, error) { return made(b, f(a1, a2)) }
}

func made2E[A1, A2, R any](b *Budget, f func(A1, A2) (R, error)) func(A1, A2) (R, error) {
	return func(a1 A1, a2 A2) (R, error) {
		r, err := f(a1, a2)
		if err != nil {
			return r, err
		}
		return made(b, r)
	}
}

func madeVariadic[R any](b *Budget, f func(...any) R) func(...any) (R, error) {
	return func(args ...any) (R, error) { return made(b, f(args...)) }
}

// formatter bounds a function that formats all its arguments.
func formatter(b *Budget, f func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		if err := checkArgs(args, 1); err != nil {
			return "", err
		}
		return b.madeString(f(args...))
	}
}

// encoder bounds a function that encodes a value, indenting nested items by indent.
func encoder(b *Budget, f func(any) string, indent int) func(any) (string, error) {
	return func(v any) (string, error) {
		if _, err := sizeOfIndented(v, MaxValueSize, indent); err != nil {
			return "", err
		}
		return b.madeString(f(v))
	}
}

// checkSize fails when a function's result would take n bytes, more than MaxValueSize; n < 0
// means the size overflowed.
func checkSize(n int64) error {
	if n < 0 {
		return errValueSize("the result", -1)
	}
	if n > MaxValueSize {
		return errValueSize("the result", n)
	}
	return nil
}

// checkArgs fails when args, each counted with overhead bytes more, add up to more than
// MaxValueSize.
func checkArgs(args []any, overhead int) error {
	left := MaxValueSize
	for _, a := range args {
		n, err := sizeOf(a, left)
		if err != nil {
			return errValueSize("the arguments", -1)
		}
		left -= n + overhead
		if left < 0 {
			return errValueSize("the arguments", -1)
		}
	}
	return nil
}

// checkParts fails when splitting s at sep, into at most n parts when n >= 0, makes more
// than MaxValueSize, each part counted with overhead bytes more.
func checkParts(s, sep string, n, overhead int) error {
	parts := strings.Count(s, sep) + 1
	if n >= 0 && n < parts {
		parts = n
	}
	return checkSize(int64(len(s)) + int64(parts)*int64(overhead))
}

// length is how many items join makes of v.
func length(v any) int {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		return rv.Len()
	default:
		return 1
	}
}

// checkPrintf fails when printf could make more than MaxValueSize: the format, the
// arguments and the widths and precisions it pads to (fmt refuses more than 1e6 each).
func checkPrintf(format string, args []any) error {
	n := int64(len(format))
	// star is the largest width or precision an argument could give a '*'.
	star := int64(0)
	for _, a := range args {
		s, err := sizeOf(a, MaxValueSize)
		if err != nil {
			return errValueSize("the arguments", -1)
		}
		n += int64(s)
		if i, ok := asInt(a); ok {
			star = max(star, min(int64(math.Abs(float64(i))), 1e6))
		}
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		for i++; i < len(format) && strings.IndexByte("+-# 0123456789.*[]", format[i]) >= 0; i++ {
			switch c := format[i]; {
			case c == '*':
				n += star
			case c >= '1' && c <= '9':
				j := i
				for j < len(format) && format[j] >= '0' && format[j] <= '9' {
					j++
				}
				if v, err := strconv.ParseInt(format[i:j], 10, 64); err == nil && v <= 1e6 {
					n += v
				}
				i = j - 1
			}
		}
	}
	return checkSize(n)
}

func (b *Budget) repeat(count int, str string) (string, error) {
	if count > 0 && len(str) > 0 {
		size := int64(-1)
		if count <= math.MaxInt64/len(str) {
			size = int64(count) * int64(len(str))
		}
		if err := checkSize(size); err != nil {
			return "", err
		}
	}
	// A negative count panics in strings.Repeat; text/template reports it as an error.
	return b.madeString(strings.Repeat(str, count))
}

// indent is sprig's indent (and, with prefix "\n", nindent).
func (b *Budget) indent(spaces int, str, prefix string) (string, error) {
	if spaces > 0 {
		lines := int64(strings.Count(str, "\n") + 1)
		if err := checkSize(int64(len(str)) + lines*min(int64(spaces), math.MaxInt32)); err != nil {
			return "", err
		}
	}
	pad := strings.Repeat(" ", spaces)
	return b.madeString(prefix + pad + strings.ReplaceAll(str, "\n", "\n"+pad))
}

// replace is sprig's replace: every old in src replaced by new.
func (b *Budget) replace(old, new, src string) (string, error) {
	if grow := len(new) - len(old); grow > 0 {
		if err := checkSize(int64(len(src)) + int64(strings.Count(src, old))*int64(grow)); err != nil {
			return "", err
		}
	}
	return b.madeString(strings.ReplaceAll(src, old, new))
}

// merge runs a merge of srcs into dst, checking what it adds.
func (b *Budget) merge(dst map[string]any, srcs []map[string]any, run func() (any, error)) (any, error) {
	added := 0
	for _, src := range srcs {
		n, err := sizeOf(src, MaxValueSize-added)
		if err != nil {
			return nil, errValueSize("the maps merged", -1)
		}
		added += n
	}
	r, err := run()
	if err != nil {
		return r, err
	}
	if _, err := sizeOf(dst, MaxValueSize); err != nil {
		return nil, err
	}
	return r, b.charge(added)
}

// untilStep is sprig's untilStep, refusing lists longer than maxInts and safe from overflow
// (sprig's loops forever when the last step overflows).
func untilStep(start, stop, step int) ([]int, error) {
	var n uint64
	switch {
	case stop < start && step < 0:
		n = ceilDiv(uint64(start)-uint64(stop), uint64(-(step+1))+1)
	case stop > start && step > 0:
		n = ceilDiv(uint64(stop)-uint64(start), uint64(step))
	}
	if n > maxInts {
		return nil, errValueSize("the list", -1)
	}
	v := make([]int, n)
	for i, x := 0, start; i < len(v); i, x = i+1, x+step {
		v[i] = x
	}
	return v, nil
}

func ceilDiv(a, b uint64) uint64 {
	n := a / b
	if a%b != 0 {
		n++
	}
	return n
}

// seq is sprig's seq: the numbers from start to end, by step, separated by spaces.
func seq(params ...int) (string, error) {
	var start, end, step int
	switch len(params) {
	case 1:
		start, end, step = 1, params[0], 1
		if end < start {
			step = -1
		}
		end += step
	case 2:
		start, end, step = params[0], params[1], 1
		if end < start {
			step = -1
		}
		end += step
	case 3:
		start, step, end = params[0], params[1], params[2]
		increment := 1
		if end < start {
			increment = -1
			if step > 0 {
				return "", nil
			}
		}
		end += increment
	default:
		return "", nil
	}
	v, err := untilStep(start, end, step)
	if err != nil {
		return "", err
	}
	out := make([]byte, 0, len(v)*8)
	for i, x := range v {
		if i > 0 {
			out = append(out, ' ')
		}
		out = strconv.AppendInt(out, int64(x), 10)
	}
	return string(out), nil
}

// uniq is sprig's uniq: the items of list without repeats, compared with reflect.DeepEqual,
// in order. Strings, numbers and booleans are found through a map rather than compared with
// every item kept, which makes sprig's quadratic, for 10,000 items, take seconds.
func uniq(list any) ([]any, error) {
	v := reflect.ValueOf(list)
	if k := v.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, fmt.Errorf("cannot find uniq on type %s", k)
	}
	out := []any{}
	seen := map[any]bool{}
	var others []any
	for i := range v.Len() {
		item := v.Index(i).Interface()
		if hashable(item) {
			if !seen[item] {
				seen[item] = true
				out = append(out, item)
			}
			continue
		}
		dup := false
		for _, o := range others {
			if reflect.DeepEqual(item, o) {
				dup = true
				break
			}
		}
		if !dup {
			others = append(others, item)
			out = append(out, item)
		}
	}
	return out, nil
}

// hashable reports whether comparing v with == gives reflect.DeepEqual's answer, so that v
// can be a map key.
func hashable(v any) bool {
	if v == nil {
		return true
	}
	switch reflect.TypeOf(v).Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	default:
		return false
	}
}

var errorType = reflect.TypeFor[error]()

// slow wraps f, a function that takes long, to check the time before it runs and to check
// and charge what it returns. Its types include sprig's unexported certificate, hence
// reflection; the calls take milliseconds to seconds anyway.
func slow(b *Budget, f any) any {
	fv := reflect.ValueOf(f)
	ft := fv.Type()
	returnsErr := ft.NumOut() == 2 && ft.Out(1) == errorType
	fail := func(err error) []reflect.Value {
		if !returnsErr {
			// text/template turns a panic in a function into an error.
			panic(err)
		}
		return []reflect.Value{reflect.Zero(ft.Out(0)), reflect.ValueOf(&err).Elem()}
	}
	return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		if err := b.checkTime(); err != nil {
			return fail(err)
		}
		var out []reflect.Value
		if ft.IsVariadic() {
			out = fv.CallSlice(args)
		} else {
			out = fv.Call(args)
		}
		if returnsErr && !out[1].IsNil() {
			return out
		}
		if _, err := made(b, out[0].Interface()); err != nil {
			return fail(err)
		}
		return out
	}).Interface()
}

// regexpFuncs returns sprig's regular expression functions, each checking the time and the
// work the expression needs for its input. The must variants, which sprig has return an
// error rather than panic, are the same functions: in a template both are an error.
func (b *Budget) regexpFuncs() template.FuncMap {
	match := func(expr, s string) (bool, error) {
		re, err := b.compileRegexp(expr, s)
		if err != nil {
			return false, err
		}
		return re.MatchString(s), nil
	}
	find := func(expr, s string) (string, error) {
		re, err := b.compileRegexp(expr, s)
		if err != nil {
			return "", err
		}
		return b.madeString(re.FindString(s))
	}
	findAll := func(expr, s string, n int) ([]string, error) {
		re, err := b.compileRegexp(expr, s)
		if err != nil {
			return nil, err
		}
		return boundedList(b, n, func(n int) []string { return re.FindAllString(s, n) })
	}
	split := func(expr, s string, n int) ([]string, error) {
		re, err := b.compileRegexp(expr, s)
		if err != nil {
			return nil, err
		}
		return boundedList(b, n, func(n int) []string { return re.Split(s, n) })
	}
	replaceAll := func(expr, s, repl string) (string, error) { return b.replaceRegexp(expr, s, repl, false) }
	replaceAllLiteral := func(expr, s, repl string) (string, error) { return b.replaceRegexp(expr, s, repl, true) }
	return template.FuncMap{
		"regexMatch": match, "mustRegexMatch": match,
		"regexFind": find, "mustRegexFind": find,
		"regexFindAll": findAll, "mustRegexFindAll": findAll,
		"regexSplit": split, "mustRegexSplit": split,
		"regexReplaceAll": replaceAll, "mustRegexReplaceAll": replaceAll,
		"regexReplaceAllLiteral": replaceAllLiteral, "mustRegexReplaceAllLiteral": replaceAllLiteral,
		"regexQuoteMeta": func(s string) (string, error) { return b.madeString(regexp.QuoteMeta(s)) },
	}
}

// boundedList calls list with n, or with one more than maxItems when n asks for more or for
// all, and refuses a result longer than maxItems.
func boundedList(b *Budget, n int, list func(n int) []string) ([]string, error) {
	limited := n < 0 || n > maxItems
	if limited {
		n = maxItems + 1
	}
	r := list(n)
	if limited && len(r) > maxItems {
		return nil, errValueSize("the list", -1)
	}
	return made(b, r)
}

// compileRegexp compiles expr, for matching against s, once the time and the work allow it.
func (b *Budget) compileRegexp(expr, s string) (*regexp.Regexp, error) {
	if err := b.checkTime(); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, err
	}
	if work := int64(len(prog.Inst)) * int64(len(s)+1); work > MaxRegexpWork {
		return nil, &LimitError{Limit: LimitRegexpWork, Max: MaxRegexpWork,
			msg: fmt.Sprintf("matching an expression of %d instructions against %d bytes is over the limit of %d (instructions × bytes)",
				len(prog.Inst), len(s), MaxRegexpWork)}
	}
	return re, nil
}

// replaceRegexp is regexReplaceAll (or, literal, regexReplaceAllLiteral), refusing a result
// larger than MaxValueSize before it is made.
func (b *Budget) replaceRegexp(expr, s, repl string, literal bool) (string, error) {
	re, err := b.compileRegexp(expr, s)
	if err != nil {
		return "", err
	}
	// Every match becomes repl with each $ reference expanded to at most the match.
	refs := int64(strings.Count(repl, "$"))
	if literal {
		refs = 0
	}
	n := int64(len(s))
	if bound := n + (n+1)*int64(len(repl)) + refs*n; bound > MaxValueSize {
		// Too large in the worst case: count the matches.
		var matches, matched int64
		re.ReplaceAllStringFunc(s, func(m string) string {
			matches++
			matched += int64(len(m))
			return ""
		})
		if err := checkSize(n - matched + matches*int64(len(repl)) + refs*matched); err != nil {
			return "", err
		}
	}
	if literal {
		return b.madeString(re.ReplaceAllLiteralString(s, repl))
	}
	return b.madeString(re.ReplaceAllString(s, repl))
}
