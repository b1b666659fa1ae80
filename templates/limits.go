package templates

import (
	"fmt"
	"time"
)

// The limits on rendering. Templates are written by whoever may create an ApplicationSet and
// run inside the controller that serves every tenant, so one template must not be able to
// exhaust its memory or hold it for long. A limit that is exceeded fails the render with a
// *LimitError inside the *FieldError of the field being rendered.
const (
	// MaxFieldSize is the most bytes one templated string may render to: a field, a map key
	// or the whole templatePatch. Output is written into a buffer that refuses to grow past it,
	// so a runaway loop stops at the limit instead of buffering gigabytes.
	MaxFieldSize = 1 << 20
	// MaxApplicationSize is the most bytes all the templated strings of one Application,
	// its templatePatch included, may render to together: more than twice what the API
	// server stores in one object.
	MaxApplicationSize = 4 << 20
	// MaxValueSize is the most a value made by a template function may hold: a string of
	// that many bytes, or a list or map taking about as much memory (sizeOf). Functions whose
	// result grows with an argument (repeat, until, indent, replace, ...) check the size
	// before they allocate.
	MaxValueSize = MaxFieldSize
	// MaxSteps is the most range iterations and template calls one templated string may
	// take, output or not ({{ range 1000000000 }}{{ end }} writes nothing): a few
	// milliseconds of text/template's own work.
	MaxSteps = 100_000
	// MaxDepth is the deepest a value made by template functions may nest; a map that
	// contains itself (set $d "d" $d) exceeds it.
	MaxDepth = 100
	// MaxRandomLength is the longest string randAlpha, randAlphaNum, randAscii and
	// randNumeric may make: they draw every character from crypto/rand, about a second per
	// million.
	MaxRandomLength = 64 << 10
	// MaxRegexpWork bounds one call of a regular expression function: the instructions of
	// the compiled expression times the bytes of the input, about 0.6 s of matching at most.
	MaxRegexpWork = 50_000_000
)

// Limit names a limit on rendering.
type Limit string

// The limits, as LimitError.Limit names them.
const (
	// LimitFieldSize is MaxFieldSize.
	LimitFieldSize Limit = "FieldSize"
	// LimitApplicationSize is MaxApplicationSize.
	LimitApplicationSize Limit = "ApplicationSize"
	// LimitValueSize is MaxValueSize.
	LimitValueSize Limit = "ValueSize"
	// LimitSteps is MaxSteps.
	LimitSteps Limit = "Steps"
	// LimitDepth is MaxDepth.
	LimitDepth Limit = "Depth"
	// LimitRandomLength is MaxRandomLength.
	LimitRandomLength Limit = "RandomLength"
	// LimitRegexpWork is MaxRegexpWork.
	LimitRegexpWork Limit = "RegexpWork"
	// LimitRenderTime is the time of a Budget.
	LimitRenderTime Limit = "RenderTime"
	// LimitRenderBytes is the bytes of a Budget.
	LimitRenderBytes Limit = "RenderBytes"
)

// LimitError is a render stopped by a limit. It is always wrapped in a *FieldError naming
// the field that was being rendered.
type LimitError struct {
	// Limit is the limit that was exceeded.
	Limit Limit
	// Max is the limit's value: bytes, steps, levels, characters, or nanoseconds for
	// LimitRenderTime.
	Max int64
	msg string
}

// Error says what exceeded which limit.
func (e *LimitError) Error() string { return e.msg }

func errFieldSize() error {
	return &LimitError{Limit: LimitFieldSize, Max: MaxFieldSize,
		msg: fmt.Sprintf("the rendered string exceeds the limit of %d bytes per field", MaxFieldSize)}
}

func errApplicationSize() error {
	return &LimitError{Limit: LimitApplicationSize, Max: MaxApplicationSize,
		msg: fmt.Sprintf("the rendered strings of the Application exceed the limit of %d bytes in total", MaxApplicationSize)}
}

// errValueSize says that a value (what: "the result", "the arguments", ...) takes size
// bytes; size < 0 means "more than the limit".
func errValueSize(what string, size int64) error {
	amount := fmt.Sprintf("%d bytes", size)
	if size < 0 {
		amount = fmt.Sprintf("more than %d bytes", MaxValueSize)
	}
	return &LimitError{Limit: LimitValueSize, Max: MaxValueSize,
		msg: fmt.Sprintf("%s would take %s, over the limit of %d bytes per value", what, amount, MaxValueSize)}
}

func errDepth() error {
	return &LimitError{Limit: LimitDepth, Max: MaxDepth,
		msg: fmt.Sprintf("the value nests deeper than the limit of %d levels, or contains itself", MaxDepth)}
}

var errSteps = &LimitError{Limit: LimitSteps, Max: MaxSteps,
	msg: fmt.Sprintf("more than %d range iterations and template calls, the limit per field", MaxSteps)}

func errRenderTime(d time.Duration) error {
	return &LimitError{Limit: LimitRenderTime, Max: int64(d),
		msg: fmt.Sprintf("rendering took longer than the limit of %s for one pass over the ApplicationSet", d)}
}

func errRenderBytes(n int64) error {
	return &LimitError{Limit: LimitRenderBytes, Max: n,
		msg: fmt.Sprintf("rendering made more than the limit of %d bytes for one pass over the ApplicationSet", n)}
}
