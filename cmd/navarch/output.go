package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/scheme"
)

// checkOutput returns a usage error unless format is one of allowed.
func checkOutput(format string, allowed ...string) error {
	if slices.Contains(allowed, format) {
		return nil
	}
	return usageError{fmt.Errorf("--output must be %s, got %q", orList(allowed), format)}
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// palette colours terminal text; the zero value leaves text alone.
type palette struct{ enabled bool }

// paletteFor colours output only for a terminal, and never when $NO_COLOR is set
// (https://no-color.org).
func paletteFor(w io.Writer) palette {
	if os.Getenv("NO_COLOR") != "" {
		return palette{}
	}
	f, ok := w.(*os.File)
	if !ok {
		return palette{}
	}
	info, err := f.Stat()
	return palette{enabled: err == nil && info.Mode()&os.ModeCharDevice != 0}
}

const (
	ansiRed    = "31"
	ansiGreen  = "32"
	ansiYellow = "33"
	ansiGrey   = "90"
)

func (p palette) paint(code, s string) string {
	if !p.enabled || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// sync colours a sync status: green when Synced, yellow when OutOfSync, grey otherwise.
func (p palette) sync(code navarchv1.SyncStatusCode, text string) string {
	switch code {
	case navarchv1.SyncStatusSynced:
		return p.paint(ansiGreen, text)
	case navarchv1.SyncStatusOutOfSync:
		return p.paint(ansiYellow, text)
	}
	return p.paint(ansiGrey, text)
}

// health colours a health status: green, yellow while it may still become healthy, red when
// it is broken.
func (p palette) health(code navarchv1.HealthStatusCode, text string) string {
	switch code {
	case navarchv1.HealthHealthy:
		return p.paint(ansiGreen, text)
	case navarchv1.HealthProgressing, navarchv1.HealthSuspended:
		return p.paint(ansiYellow, text)
	case navarchv1.HealthDegraded, navarchv1.HealthMissing:
		return p.paint(ansiRed, text)
	}
	return p.paint(ansiGrey, text)
}

// phase colours an operation phase.
func (p palette) phase(phase navarchv1.OperationPhase, text string) string {
	switch phase {
	case navarchv1.OperationSucceeded:
		return p.paint(ansiGreen, text)
	case navarchv1.OperationRunning, navarchv1.OperationTerminating:
		return p.paint(ansiYellow, text)
	case navarchv1.OperationFailed, navarchv1.OperationError:
		return p.paint(ansiRed, text)
	}
	return text
}

// condition colours a condition status; good says which status is the healthy one.
func (p palette) condition(status, good string) string {
	switch status {
	case good:
		return p.paint(ansiGreen, status)
	case "True", "False":
		return p.paint(ansiRed, status)
	}
	return p.paint(ansiGrey, status)
}

var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*m")

// visibleWidth is the width of s on a terminal: its runes, without colour escapes.
func visibleWidth(s string) int {
	return utf8.RuneCountInString(ansiEscape.ReplaceAllString(s, ""))
}

// printTable prints rows as columns three spaces apart, like kubectl. Unlike text/tabwriter
// it aligns coloured cells by their visible width.
func printTable(out io.Writer, rows [][]string) error {
	var widths []int
	for _, row := range rows {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], visibleWidth(c))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		var line strings.Builder
		for i, c := range row {
			line.WriteString(redactUserInfo(c))
			if i < len(row)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-visibleWidth(c)+3))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// fieldWidth is the column at which the values of a description start, so that all the
// sections of one description line up.
const fieldWidth = 18

// printFields prints "Label: value" lines of a description, values aligned.
func printFields(out io.Writer, fields [][]string) error {
	for _, f := range fields {
		label := f[0]
		pad := max(fieldWidth-visibleWidth(label), 1)
		if _, err := io.WriteString(out, strings.TrimRight(label+strings.Repeat(" ", pad)+redactUserInfo(f[1]), " ")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// indentTable prints a table indented by two spaces, for tables inside a description.
func indentTable(out io.Writer, rows [][]string) error {
	var b strings.Builder
	if err := printTable(&b, rows); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line != "" {
			if _, err := io.WriteString(out, "  "+line); err != nil {
				return err
			}
		}
	}
	return nil
}

// printObjects prints objects as YAML or JSON, the way kubectl get does: one object as
// itself, several (or a list command's result) as a v1 List. managedFields are left out.
func printObjects(out io.Writer, format string, asList bool, objs ...client.Object) error {
	items := make([]any, len(objs))
	for i, obj := range objs {
		m, err := objectMap(obj)
		if err != nil {
			return err
		}
		items[i] = m
	}
	var doc any
	if asList {
		doc = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	} else {
		doc = items[0]
	}
	return printDocument(out, format, doc)
}

// printDocument prints any value as indented JSON or as YAML, with user info removed from
// the URLs in its strings.
func printDocument(out io.Writer, format string, doc any) error {
	var data []byte
	var err error
	if m, err := toGeneric(doc); err == nil {
		doc = redactStrings(m)
	}
	if format == "json" {
		data, err = json.MarshalIndent(doc, "", "  ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(doc)
	}
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return err
}

var cliScheme = scheme.New()

// objectMap is obj as a generic map with its apiVersion and kind set, without managedFields
// and without fields the API server writes as null.
func objectMap(obj client.Object) (map[string]any, error) {
	obj = obj.DeepCopyObject().(client.Object)
	gvk, err := apiutil.GVKForObject(obj, cliScheme)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	obj.SetManagedFields(nil)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	if meta, ok := m["metadata"].(map[string]any); ok && meta["creationTimestamp"] == nil {
		delete(meta, "creationTimestamp")
	}
	return m, nil
}

// describeSource is one source as `app get` and `appset get` print it: "REPO, path P, revision R"
// for a Git directory, "REPO, chart C, version V" for a chart, with its ref.
func describeSource(src navarchv1.ApplicationSource) string {
	var s string
	switch {
	case src.Chart != "":
		s = fmt.Sprintf("%s, chart %s, version %s", src.RepoURL, src.Chart, orDefault(src.TargetRevision, "latest"))
	case src.Path == "" && src.Ref != "":
		s = fmt.Sprintf("%s, revision %s", src.RepoURL, orDefault(src.TargetRevision, "HEAD"))
	default:
		s = fmt.Sprintf("%s, path %s, revision %s", src.RepoURL, orDash(src.Path), orDefault(src.TargetRevision, "HEAD"))
	}
	if src.Ref != "" {
		s += ", ref $" + src.Ref
	}
	return s
}

// sourcePath is what names a source in a table: its path, or its chart.
func sourcePath(src navarchv1.ApplicationSource) string { return cmp.Or(src.Path, src.Chart) }

// describeSources adds a field per source: "Source:" for one, "Sources:" and one line per
// source for several.
func describeSources(field func(name, value string), indent string, sources []navarchv1.ApplicationSource) {
	if len(sources) == 1 {
		field(indent+"Source", describeSource(sources[0]))
		return
	}
	field(indent+"Sources", fmt.Sprint(len(sources)))
	for i, src := range sources {
		field(fmt.Sprintf("%s  [%d]", indent, i), describeSource(src))
	}
}

// ago is how long before now t was, as kubectl prints ages: "5m", "3h12m", "2d".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return duration.HumanDuration(now.Sub(t))
}

// orDash returns s, or "-" when it is empty, so a table cell is never blank.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine makes a message fit a table cell: its first line, at most n runes.
func oneLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n-1]) + "…"
	}
	return s
}

// labelList prints labels as k=v,k=v in key order.
func labelList(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}

// userInfo matches the user info of URLs inside any text: everything between "scheme://" and
// an "@" before the host's end.
var userInfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s"'<>]*@`)

// redactUserInfo removes user info (which may hold a password or token) from every URL in s.
// Every CLI output goes through it: a URL with credentials may have been stored before
// navarch refused them, and such a URL must not be shown.
func redactUserInfo(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return userInfo.ReplaceAllString(s, "$1")
}

// toGeneric turns v into maps, slices and scalars, as JSON would.
func toGeneric(v any) (any, error) {
	switch v.(type) {
	case map[string]any, []any:
		return v, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(data, &out)
}

// redactStrings applies redactUserInfo to every string in a generic value, in place.
func redactStrings(v any) any {
	switch t := v.(type) {
	case string:
		return redactUserInfo(t)
	case map[string]any:
		for k, e := range t {
			t[k] = redactStrings(e)
		}
	case []any:
		for i, e := range t {
			t[i] = redactStrings(e)
		}
	}
	return v
}
