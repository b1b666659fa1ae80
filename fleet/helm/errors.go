package helm

import (
	"regexp"
	"strconv"
	"strings"
)

// TemplateError is a chart template that failed to parse or to execute. Its message reads
// "templates/deployment.yaml:12: executing …: nil pointer evaluating interface {}.port".
type TemplateError struct {
	// File is the template's path in the chart, such as "templates/deployment.yaml", or
	// "charts/db/templates/secret.yaml" in a subchart; empty when the engine does not say.
	File string
	// Line is the template's 1-based line; 0 when unknown.
	Line int
	// Message is what went wrong. When the failure is in a template that File includes, it
	// names that template and line too.
	Message string
}

// Error returns "file:line: message", "file: message" without a line, or the message alone.
func (e *TemplateError) Error() string {
	switch {
	case e.File == "":
		return e.Message
	case e.Line == 0:
		return e.File + ": " + e.Message
	}
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Message
}

var (
	// templateLocation is a template name with its line and column, as text/template writes it.
	templateLocation = regexp.MustCompile(`^(\S+?):(\d+)(?::\d+)?$`)
	// wrappedLocation is how the Helm engine prefixes parse errors and failures of
	// `required` and `fail`: "parse error at (web/templates/a.yaml:3): …".
	wrappedLocation = regexp.MustCompile(`(?s)^(?:parse|execution) error (?:at|in) \((.+?)\): (.*)$`)
	// goLocation is text/template's own prefix: "template: web/templates/a.yaml:3:7: …".
	goLocation = regexp.MustCompile(`(?s)^template: (\S+?:\d+(?::\d+)?): (.*)$`)
)

// newTemplateError turns an error of the Helm engine for the chart called chartName into a
// *TemplateError. The engine reports template names with the chart's name in front
// ("web/templates/a.yaml"), lines with columns, and execution failures as an indented list
// of locations; the error says each location once, as a path in the chart with its line.
func newTemplateError(chartName string, err error) error {
	prefix := chartName + "/"
	msg := strings.TrimSpace(err.Error())
	e := &TemplateError{}
	switch {
	case wrappedLocation.MatchString(msg):
		m := wrappedLocation.FindStringSubmatch(msg)
		e.File, e.Line = splitLocation(m[1], prefix)
		e.Message = m[2]
	case goLocation.MatchString(msg):
		m := goLocation.FindStringSubmatch(msg)
		e.File, e.Line = splitLocation(m[1], prefix)
		e.Message = m[2]
	default:
		e.File, e.Line, e.Message = traceMessage(msg, prefix)
	}
	// Template names in the message lose the chart's name too.
	e.Message = strings.NewReplacer(`"`+prefix, `"`, " "+prefix, " ").Replace(strings.TrimSpace(e.Message))
	return e
}

// traceMessage reads the engine's list of locations:
//
//	web/templates/a.yaml:12:3
//	  executing "web/templates/a.yaml" at <include "x" .>:
//	    error calling include:
//	web/templates/_helpers.tpl:3:4
//	  executing "x" at <.Values.a.b>:
//	    nil pointer evaluating interface {}.b
//
// and returns the first location and the rest on one line. Text that is not such a list is
// the message alone.
func traceMessage(msg, prefix string) (file string, line int, message string) {
	var b strings.Builder
	for i, l := range strings.Split(msg, "\n") {
		indented := strings.HasPrefix(l, " ")
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if !indented && templateLocation.MatchString(l) {
			f, n := splitLocation(l, prefix)
			if i == 0 {
				file, line = f, n
				continue
			}
			l = f
			if n > 0 {
				l += ":" + strconv.Itoa(n)
			}
			l += ":"
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(l)
	}
	return file, line, b.String()
}

// splitLocation splits "web/templates/a.yaml:12:3" into the path in the chart and the line.
func splitLocation(loc, prefix string) (string, int) {
	file, line := loc, 0
	if m := templateLocation.FindStringSubmatch(loc); m != nil {
		file = m[1]
		line, _ = strconv.Atoi(m[2])
	}
	return strings.TrimPrefix(file, prefix), line
}
