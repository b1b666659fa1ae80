package templates

import (
	"bytes"
	"text/template"
	"time"
)

// checkEvery is how many writes the output lets pass between two looks at the clock.
const checkEvery = 64

// output receives what one render (an Application, or one string for an Engine) writes,
// string by string, and enforces the limits on it; its zero value is ready for a render
// without a Budget. Go templates write into it as they
// execute, and every range iteration and template call writes an empty string into it (see
// instrument), so that it can refuse the write that crosses a limit: text/template then
// stops at once. This is the only way to stop a template in the middle of its execution.
type output struct {
	// buf holds the string being rendered.
	buf bytes.Buffer

	budget   *Budget
	start    time.Time
	deadline time.Time // zero: no time limit
	checks   int       // writes left until the next look at the clock

	// rendered is how many bytes the Application's strings have rendered to so far.
	rendered int
	// max is how many bytes the string being rendered may take, and limit which limit that
	// is: MaxFieldSize, or less when the Application's allowance is nearly spent.
	max   int
	limit Limit
	// steps is how many range iterations and template calls the string may still take.
	steps int
}

// begin starts rendering one Application, or one string, against budget (nil: none).
func (o *output) begin(budget *Budget) error {
	start, deadline, err := budget.begin()
	if err != nil {
		return err
	}
	o.budget, o.start, o.deadline, o.checks, o.rendered = budget, start, deadline, checkEvery, 0
	return nil
}

// end finishes the render, charging the budget for its strings and the extra bytes (the
// untemplated part of an Application).
func (o *output) end(extra int) error {
	return o.budget.end(o.start, o.rendered+extra)
}

// next prepares for the next string.
func (o *output) next() {
	o.buf.Reset()
	o.steps = MaxSteps
	o.max, o.limit = MaxFieldSize, LimitFieldSize
	if left := MaxApplicationSize - o.rendered; left < o.max {
		o.max, o.limit = left, LimitApplicationSize
	}
}

// done counts a rendered string of n bytes.
func (o *output) done(n int) { o.rendered += n }

// tooLarge is the error for a string longer than max.
func (o *output) tooLarge() error {
	if o.limit == LimitApplicationSize {
		return errApplicationSize()
	}
	return errFieldSize()
}

// Write appends p to the string being rendered, or fails when that crosses a limit. An empty
// p is a step: a range iteration or a template call.
func (o *output) Write(p []byte) (int, error) {
	if len(p) == 0 {
		if o.steps--; o.steps < 0 {
			return 0, errSteps
		}
	}
	if o.checks--; o.checks <= 0 {
		o.checks = checkEvery
		if !o.deadline.IsZero() && time.Now().After(o.deadline) {
			return 0, errRenderTime(o.budget.time)
		}
	}
	if len(p) > o.max-o.buf.Len() {
		return 0, o.tooLarge()
	}
	return o.buf.Write(p)
}

// execute runs t with params into the output, as the next string.
func (o *output) execute(t *template.Template, params map[string]any) error {
	o.next()
	if err := t.Execute(o, params); err != nil {
		return cleanExecError(err)
	}
	o.done(o.buf.Len())
	return nil
}
