package templates

import (
	"fmt"
	"strings"
)

// FieldError is a rendering error in one field of the ApplicationSet. Field is the path of the
// field as the user wrote it, such as "spec.template.metadata.name",
// "spec.template.metadata.labels[team]", "spec.template.spec.source.path" or
// "spec.templatePatch".
type FieldError struct {
	// Field is the path of the templated field.
	Field string
	// Err is what went wrong.
	Err error
}

// Error returns "field: error".
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *FieldError) Unwrap() error { return e.Err }

// WithParamSet appends the position of the parameter set that failed to render, giving for
// example `spec.template.spec.source.path: map has no entry for key "path" (parameter set 3 of
// generator 0)`. The indices are printed as given. It returns nil for a nil error, and the result
// wraps err.
func WithParamSet(err error, set, generator int) error {
	if err == nil {
		return nil
	}
	return &paramSetError{err: err, set: set, generator: generator}
}

type paramSetError struct {
	err            error
	set, generator int
}

func (e *paramSetError) Error() string {
	return fmt.Sprintf("%s (parameter set %d of generator %d)", e.err.Error(), e.set, e.generator)
}

func (e *paramSetError) Unwrap() error { return e.err }

// templateError is a text/template error with text/template's location prefix removed, so that
// it reads well after a field path; it still unwraps to the original error.
type templateError struct {
	msg string
	err error
}

func (e *templateError) Error() string { return e.msg }
func (e *templateError) Unwrap() error { return e.err }

// tmplName is the name every parsed Go template gets; errors quote it and cleanParseError and
// cleanExecError strip it again.
const tmplName = "t"

// cleanParseError turns `template: t:3: function "env" not defined` into
// `function "env" not defined`, or `line 3: ...` when the source has several lines.
func cleanParseError(err error, src string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "template: "+tmplName+":")
	if !ok {
		return err
	}
	line, body, ok := strings.Cut(rest, ": ")
	if !ok {
		return err
	}
	// The location is "line" or "line:col".
	line, _, _ = strings.Cut(line, ":")
	if strings.Contains(src, "\n") {
		body = "line " + line + ": " + body
	}
	return &templateError{msg: body, err: err}
}

// cleanExecError turns `template: t:1:3: executing "t" at <.path>: map has no entry for key
// "path"` into `map has no entry for key "path"`.
func cleanExecError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "template: "+tmplName+":")
	if !ok {
		return err
	}
	// Errors without a node read "template: t: message".
	if body, ok := strings.CutPrefix(rest, " "); ok {
		return &templateError{msg: body, err: err}
	}
	marker := `executing "` + tmplName + `" at <`
	if i := strings.Index(rest, marker); i >= 0 {
		if j := strings.Index(rest[i+len(marker):], ">: "); j >= 0 {
			body := rest[i+len(marker)+j+3:]
			// The guard that addGuards inserts is not the user's: its error stands alone.
			body = strings.TrimPrefix(body, "error calling "+guardFunc+": ")
			return &templateError{msg: body, err: err}
		}
	}
	return err
}
