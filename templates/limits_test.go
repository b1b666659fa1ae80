package templates

import (
	"errors"
	"fmt"
	"maps"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	"k8s.io/apimachinery/pkg/runtime"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// issueTemplate is the name template that took the controller from 115 MB to 1.29 GB.
const issueTemplate = `mem-{{ len (repeat 600000000 "x") }}`

// defines returns a template set where template "t0" calls "t1" twice, "t1" calls "t2" twice,
// and so on: 2^n calls that write nothing.
func defines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{{ define "t%d" }}{{ template "t%d" }}{{ template "t%d" }}{{ end }}`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `{{ define "t%d" }}{{ end }}{{ template "t0" }}`, n)
	return b.String()
}

// wantLimit checks that err is a *FieldError for field, or one of fields, holding a
// *LimitError for limit.
func wantLimit(t *testing.T, err error, limit Limit, field string, fields ...string) {
	t.Helper()
	fields = append(fields, field)
	var fe *FieldError
	var le *LimitError
	switch {
	case err == nil:
		t.Fatalf("no error, want the %s limit at %s", limit, field)
	case !errors.As(err, &fe) || !slices.Contains(fields, fe.Field):
		t.Fatalf("error %q, want a *FieldError for %s", err, strings.Join(fields, " or "))
	case !errors.As(err, &le) || le.Limit != limit:
		t.Fatalf("error %q, want the %s limit", err, limit)
	}
}

func TestLimitsRefuseAbusiveTemplates(t *testing.T) {
	big := `{{ $x := repeat 600000 "x" }}`
	tests := []struct {
		name     string
		tmpl     string
		limit    Limit
		contains string
	}{
		{"the template of the issue", issueTemplate, LimitValueSize, "error calling repeat: the result would take 600000000 bytes"},
		{"repeat larger than a value", `{{ repeat 2000000 "x" }}`, LimitValueSize, "repeat"},
		{"repeat overflowing int", `{{ repeat 9223372036854775807 "xx" }}`, LimitValueSize, "more than 1048576 bytes"},
		{"output larger than a field", `{{ range 2000 }}{{ repeat 1000 "x" }}{{ end }}`, LimitFieldSize, "exceeds the limit of 1048576 bytes per field"},
		{"range over a huge number writing nothing", `{{ range 1000000000000 }}{{ end }}`, LimitSteps, "more than 100000 range iterations"},
		{"range over a huge number with continue", `{{ range 1000000000000 }}{{ continue }}{{ end }}`, LimitSteps, "range iterations"},
		{"2^20 template calls", defines(20), LimitSteps, "template calls"},
		{"until", `{{ len (until 100000000) }}`, LimitValueSize, "until"},
		{"untilStep", `{{ len (untilStep 0 1000000000 2) }}`, LimitValueSize, "untilStep"},
		{"seq", `{{ len (seq 100000000) }}`, LimitValueSize, "seq"},
		{"indent", `{{ len (indent 100000000 "a\nb") }}`, LimitValueSize, "indent"},
		{"nindent", `{{ len (nindent 1000 (repeat 10000 "\n")) }}`, LimitValueSize, "nindent"},
		{"replace", `{{ len (replace "" (repeat 1000 "x") (repeat 10000 "y")) }}`, LimitValueSize, "replace"},
		{"wrapWith", `{{ len (wrapWith 1 (repeat 10000 "-") (repeat 10000 "a")) }}`, LimitValueSize, "wrapWith"},
		{"join", `{{ len (join (repeat 1000 "x") (until 40000)) }}`, LimitValueSize, "join"},
		{"cat", big + `{{ len (cat $x $x) }}`, LimitValueSize, "the arguments"},
		{"print", big + `{{ len (print $x $x) }}`, LimitValueSize, "print"},
		{"printf widths", `{{ len (printf "%1000000d%1000000d" 1 2) }}`, LimitValueSize, "printf"},
		{"printf star width", `{{ len (printf "%*d%*d" 1000000 1 1000000 2) }}`, LimitValueSize, "printf"},
		{"list", big + `{{ len (list $x $x) }}`, LimitValueSize, "list"},
		{"toPrettyJson of a deep value", `{{ $v := until 40000 }}{{ range 50 }}{{ $v = list $v }}{{ end }}{{ len (toPrettyJson $v) }}`, LimitValueSize, "toPrettyJson"},
		{"append in a loop", `{{ $l := list }}{{ range 10000 }}{{ $l = append $l (repeat 1000 "x") }}{{ end }}`, LimitValueSize, "append"},
		{"set in a loop", `{{ $d := dict }}{{ range $i := 10000 }}{{ $_ := set $d (print $i) (repeat 1000 "x") }}{{ end }}`, LimitValueSize, "set"},
		{"a map that contains itself", `{{ $d := dict }}{{ $_ := set $d "d" $d }}`, LimitDepth, "contains itself"},
		{"split", `{{ len (split "" (repeat 100000 "x")) }}`, LimitValueSize, "split"},
		{"splitList", `{{ len (splitList "" (repeat 100000 "x")) }}`, LimitValueSize, "splitList"},
		{"regexSplit", `{{ len (regexSplit "" (repeat 1000000 "x") -1) }}`, LimitValueSize, "regexSplit"},
		{"regexFindAll", `{{ len (regexFindAll "." (repeat 1000000 "x") -1) }}`, LimitValueSize, "regexFindAll"},
		{"regexReplaceAll", `{{ len (regexReplaceAll "" (repeat 10000 "x") (repeat 1000 "y")) }}`, LimitValueSize, "regexReplaceAll"},
		{"regular expression too large for its input", `{{ regexMatch (repeat 2000 "a?") (repeat 100000 "a") }}`, LimitRegexpWork, "4002 instructions"},
		{"randAlpha", `{{ len (randAlpha 100000000) }}`, LimitRandomLength, "randAlpha"},
		{"randBytes", `{{ len (randBytes 100000000) }}`, LimitValueSize, "randBytes"},
		{"a printed value made large by set", `{{ $m := dict }}{{ $l := list }}{{ range 2000 }}{{ $l = append $l $m }}{{ end }}` +
			`{{ $_ := set $m "x" (repeat 1000 "x") }}{{ $l }}`, LimitFieldSize, "exceeds the limit of 1048576 bytes per field"},
		{"an encoded value made large by set", `{{ $m := dict }}{{ $l := list $m $m $m }}{{ $_ := set $m "x" (repeat 600000 "x") }}{{ toJson $l }}`,
			LimitValueSize, "toJson"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := navarchv1.ApplicationSetTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Name: tt.tmpl}}
			_, err := render(t, tmpl, Options{GoTemplate: true}, map[string]any{"name": "a"})
			wantLimit(t, err, tt.limit, "spec.template.metadata.name")
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not say %q", err, tt.contains)
			}
		})
	}
}

func TestFieldAndApplicationSizeLimits(t *testing.T) {
	mib := strings.Repeat("x", 1<<20)
	half := strings.Repeat("y", 900<<10)
	tests := []struct {
		name   string
		tmpl   navarchv1.ApplicationSetTemplate
		patch  string
		opts   Options
		params map[string]any
		field  string
		limit  Limit
	}{
		{
			name:   "fasttemplate field",
			tmpl:   navarchv1.ApplicationSetTemplate{Spec: navarchv1.ApplicationSpec{Source: navarchv1.ApplicationSource{Path: "{{a}}/{{a}}"}}},
			params: map[string]any{"a": mib},
			field:  "spec.template.spec.source.path",
			limit:  LimitFieldSize,
		},
		{
			name:   "fasttemplate in free-form JSON",
			tmpl:   navarchv1.ApplicationSetTemplate{Spec: navarchv1.ApplicationSpec{Source: navarchv1.ApplicationSource{Helm: &navarchv1.ApplicationSourceHelm{ValuesObject: &runtime.RawExtension{Raw: []byte(`{"a":"{{a}}{{a}}"}`)}}}}},
			params: map[string]any{"a": mib},
			field:  "spec.template.spec.source.helm.valuesObject.a",
			limit:  LimitFieldSize,
		},
		{
			name: "goTemplate Application",
			tmpl: navarchv1.ApplicationSetTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Annotations: map[string]string{
				"a": "{{ .half }}", "b": "{{ .half }}", "c": "{{ .half }}", "d": "{{ .half }}", "e": "{{ .half }}",
			}}},
			opts:   Options{GoTemplate: true},
			params: map[string]any{"half": half},
			field:  "spec.template.metadata.annotations[e]",
			limit:  LimitApplicationSize,
		},
		{
			name: "fasttemplate Application",
			tmpl: navarchv1.ApplicationSetTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Labels: map[string]string{
				"a": "{{half}}", "b": "{{half}}", "c": "{{half}}", "d": "{{half}}", "e": "{{half}}",
			}}},
			params: map[string]any{"half": half},
			field:  "spec.template.metadata.labels[e]",
			limit:  LimitApplicationSize,
		},
		{
			name:   "templatePatch",
			patch:  `{{ range 2000 }}{{ repeat 1000 "#" }}{{ end }}`,
			opts:   Options{GoTemplate: true},
			params: map[string]any{"a": "b"},
			field:  "spec.templatePatch",
			limit:  LimitFieldSize,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var patch *string
			if tt.patch != "" {
				patch = &tt.patch
			}
			c, err := Compile(tt.tmpl, patch, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Render(tt.params)
			wantLimit(t, err, tt.limit, tt.field)
		})
	}
}

func TestEngineRenderStringIsLimited(t *testing.T) {
	for _, opts := range []Options{{}, {GoTemplate: true}} {
		e, err := NewEngine(opts)
		if err != nil {
			t.Fatal(err)
		}
		s, want := strings.Repeat("{{a}}", 2000), LimitFieldSize
		if opts.GoTemplate {
			s, want = issueTemplate, LimitValueSize
		}
		_, err = e.RenderString(s, map[string]any{"a": strings.Repeat("z", 1000)})
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != want {
			t.Errorf("goTemplate %v: error %v, want the %s limit", opts.GoTemplate, err, want)
		}
	}
}

func TestBudget(t *testing.T) {
	tmpl := navarchv1.ApplicationSetTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Name: "{{ .name }}-{{ repeat 1000 \"x\" }}"}}
	params := map[string]any{"name": "a"}

	t.Run("bytes", func(t *testing.T) {
		c, err := Compile(tmpl, nil, Options{GoTemplate: true, Budget: NewBudget(0, 10_000)})
		if err != nil {
			t.Fatal(err)
		}
		var renders int
		for ; renders < 100; renders++ {
			if _, err = c.Render(params); err != nil {
				break
			}
		}
		// Each Application makes about 2 KB: the value repeat makes and the name.
		if renders < 2 || renders > 5 {
			t.Errorf("%d Applications rendered before the budget ran out, want 2 to 5", renders)
		}
		wantLimit(t, err, LimitRenderBytes, "spec.template.metadata.name", "spec.template")
		_, err = c.Render(params)
		wantLimit(t, err, LimitRenderBytes, "spec.template")
	})

	t.Run("values kept alive by set", func(t *testing.T) {
		c, err := Compile(navarchv1.ApplicationSetTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{
			Name: `{{ $l := list }}{{ range 1000 }}{{ $l = append $l (dict) }}{{ end }}` +
				`{{ range $l }}{{ $_ := set . "x" (repeat 1000000 "x") }}{{ end }}`,
		}}, nil, Options{GoTemplate: true, Budget: NewBudget(0, 64<<20)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Render(params)
		wantLimit(t, err, LimitRenderBytes, "spec.template.metadata.name")
	})

	t.Run("time", func(t *testing.T) {
		// A budget of a nanosecond is spent by the time the output looks at the clock.
		for _, s := range []string{`{{ range 1000 }}{{ end }}`, `{{ genPrivateKey "rsa" }}`, `{{ regexMatch "a" "a" }}`} {
			c, err := Compile(navarchv1.ApplicationSetTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Name: s}},
				nil, Options{GoTemplate: true, Budget: NewBudget(time.Nanosecond, 0)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Render(params)
			wantLimit(t, err, LimitRenderTime, "spec.template.metadata.name")
			_, err = c.Render(params)
			wantLimit(t, err, LimitRenderTime, "spec.template")
		}
	})

	t.Run("an Engine's strings and templates share it", func(t *testing.T) {
		e, err := NewEngine(Options{GoTemplate: true, Budget: NewBudget(0, 5000)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.RenderString(`{{ repeat 2000 "x" }}`, nil); err != nil {
			t.Fatal(err)
		}
		c, err := e.Compile(tmpl, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Render(params)
		wantLimit(t, err, LimitRenderBytes, "spec.template.metadata.name", "spec.template")
	})
}

// TestAbusiveTemplatesAllocateLittle renders templates that, unbounded, would allocate
// gigabytes, and checks how much they allocated before they were refused.
func TestAbusiveTemplatesAllocateLittle(t *testing.T) {
	const bound = 64 << 20
	tests := []struct {
		name string
		tmpl string
	}{
		{"the template of the issue", issueTemplate},
		{"range", `{{ range 1000000000 }}{{ repeat 1000 "x" }}{{ end }}`},
		{"until", `{{ range until 1000000000 }}x{{ end }}`},
		{"a printed value made large by set", `{{ $m := dict }}{{ $l := list }}{{ range 200 }}{{ $l = append $l $m }}{{ end }}` +
			`{{ $_ := set $m "x" (repeat 1000000 "x") }}{{ $l }}`},
		{"values kept alive by set", `{{ $l := list }}{{ range 1000 }}{{ $l = append $l (dict) }}{{ end }}` +
			`{{ range $l }}{{ $_ := set . "x" (repeat 1000000 "x") }}{{ end }}`},
		{"values kept alive in variables", strings.Repeat(`{{ $v := repeat 1000000 "x" }}`, 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := navarchv1.ApplicationSetTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Name: tt.tmpl}}
			c, err := Compile(tmpl, nil, Options{GoTemplate: true, Budget: NewBudget(0, 32<<20)})
			if err != nil {
				t.Fatal(err)
			}
			var before, after goruntime.MemStats
			goruntime.GC()
			goruntime.ReadMemStats(&before)
			_, err = c.Render(map[string]any{"name": "a"})
			goruntime.ReadMemStats(&after)
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("error %v, want a limit", err)
			}
			if allocated := after.TotalAlloc - before.TotalAlloc; allocated > bound {
				t.Errorf("allocated %d MiB before refusing (%v), want at most %d MiB", allocated>>20, err, bound>>20)
			}
		})
	}
}

// TestBoundedFunctionsMatchSprig renders templates with the bounded functions and with
// sprig's own, in text/template as is: within the limits they give the same results.
func TestBoundedFunctionsMatchSprig(t *testing.T) {
	tests := []string{
		`{{ repeat 3 "ab" }}|{{ repeat 0 "x" }}|{{ "x" | repeat 2 }}`,
		`{{ until 5 }}|{{ until -3 }}|{{ until 0 }}|{{ untilStep 1 10 3 }}|{{ untilStep 10 1 -4 }}|{{ untilStep 1 10 -1 }}|{{ untilStep 1 10 0 }}`,
		`{{ seq 5 }}|{{ seq -3 }}|{{ seq 0 }}|{{ seq 2 6 }}|{{ seq 6 2 }}|{{ seq 0 3 10 }}|{{ seq 10 -3 0 }}|{{ seq 0 -3 10 }}|{{ seq 10 3 0 }}|{{ seq }}|{{ seq 1 2 3 4 }}`,
		`{{ indent 2 "a\nb" }}|{{ nindent 4 "c" }}|{{ indent 0 "d" }}`,
		`{{ replace "a" "bb" "banana" }}|{{ replace "" "-" "abc" }}|{{ replace "an" "" "banana" }}`,
		`{{ wrapWith 3 "<br>" "a long line of words" }}|{{ wrap 5 "a long line of words" }}`,
		`{{ join "," (list 1 "b" 2.5 nil) }}|{{ join "-" "solo" }}|{{ join "," (splitList "/" "a/b/c") }}`,
		`{{ cat "a" 1 nil (list 2) }}|{{ quote "a" 1 nil }}|{{ squote "b" }}|{{ print "a" 1 }}|{{ println "a" }}|{{ printf "%05.1f|%-4s|%*d" 3.14159 "x" 5 42 }}`,
		`{{ html "<a&b>" }}|{{ js "it's <ok>" }}|{{ urlquery "a b&c" }}`,
		`{{ toJson (dict "a" (list 1 "<b>")) }}|{{ toPrettyJson (dict "a" (list 1 2)) }}|{{ toRawJson (dict "h" "<b>") }}|{{ toString 12 }}|{{ toStrings (list 1 "a") }}`,
		`{{ mustToJson (list 1) }}|{{ mustToPrettyJson (dict "k" "v") }}|{{ mustToRawJson "<>" }}`,
		`{{ sortAlpha (list "b" "a" 3) }}|{{ keys (dict "b" 1 "a" 2) | sortAlpha }}|{{ values (dict "a" 1) }}`,
		`{{ split "/" "a/b/c" }}|{{ splitn "/" 2 "a/b/c" }}|{{ splitList "" "abc" }}|{{ (split "/" "x/y")._1 }}`,
		`{{ regexMatch "^a.c$" "abc" }}|{{ regexFind "[0-9]+" "ab12cd34" }}|{{ regexFindAll "[0-9]" "a1b2c3" -1 }}|{{ regexFindAll "[0-9]" "a1b2c3" 2 }}`,
		`{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}|{{ regexReplaceAllLiteral "a(x*)b" "-ab-axxb-" "${1}" }}|{{ regexSplit "z+" "pizza" -1 }}|{{ regexSplit "z+" "pizza" 1 }}|{{ regexQuoteMeta "1.5+" }}`,
		`{{ mustRegexMatch "a" "a" }}|{{ mustRegexFind "b+" "abbc" }}|{{ mustRegexFindAll "b" "abcb" -1 }}|{{ mustRegexReplaceAll "b" "abc" "x" }}|{{ mustRegexReplaceAllLiteral "b" "abc" "$1" }}|{{ mustRegexSplit "b" "abc" -1 }}`,
		`{{ uniq (list 1 1 "1" "a" "a" 2.0 2.0 nil nil (list 1) (list 1) (dict "a" 1) (dict "a" 1)) }}|{{ mustUniq (list "x" "x") }}`,
		`{{ $d := dict "a" 1 }}{{ $_ := set $d "b" (list 2) }}{{ $d }}|{{ merge (dict "a" 1) (dict "a" 2 "b" 3) }}|{{ mergeOverwrite (dict "a" 1) (dict "a" 2) }}`,
		`{{ mustMerge (dict "a" 1) (dict "c" 3) }}|{{ mustMergeOverwrite (dict "a" 1) (dict "a" 4) }}|{{ $d := dict "k" "v" }}{{ range $k, $v := $d }}{{ $k }}={{ $v }}{{ end }}|{{ .missing }}|{{ index $d "k" }}`,
		`{{ 3 | append (list 1 2) | len }}|{{ append (list 1) 2 }}|{{ prepend (list 1) 0 }}|{{ concat (list 1) (list 2 3) }}|{{ chunk 2 (list 1 2 3) }}`,
		`{{ compact (list 0 1 "" "a") }}|{{ rest (list 1 2 3) }}|{{ initial (list 1 2 3) }}|{{ reverse (list 1 2 3) }}|{{ without (list 1 2 3) 2 }}`,
		`{{ pluck "a" (dict "a" 1) (dict "a" 2) }}|{{ pick (dict "a" 1 "b" 2) "a" }}|{{ omit (dict "a" 1 "b" 2) "a" }}|{{ deepCopy (dict "a" (list 1)) }}`,
		`{{ upper "aé" }}|{{ lower "AB" }}|{{ title "a b" }}|{{ untitle "A B" }}|{{ swapcase "aB" }}|{{ snakecase "AbCd" }}|{{ camelcase "ab_cd" }}|{{ kebabcase "AbCd" }}`,
		`{{ nospace "a b c" }}|{{ initials "ab cd" }}|{{ b64enc "x" }}|{{ b64dec "eA==" }}|{{ b32enc "x" }}|{{ b32dec "PA======" }}|{{ abbrev 5 "abcdefgh" }}|{{ abbrevboth 5 10 "1234 5678 9123 4567" }}`,
		`{{ clean "a//b/../c" }}|{{ dir "a/b/c" }}|{{ osClean "a//b" }}|{{ osDir "a/b" }}|{{ fromJson "{\"a\":[1,2]}" }}|{{ mustFromJson "[1]" }}`,
		`{{ urlParse "https://u@h:1/p?q=1#f" }}|{{ urlJoin (dict "scheme" "https" "host" "h" "path" "/p") }}`,
		`{{ date "2006-01-02" (toDate "2006-01-02" "2024-05-06") }}|{{ dateInZone "15:04" (toDate "2006-01-02" "2024-05-06") "UTC" }}`,
		`{{ len (randAlpha 10) }}{{ len (randAlphaNum 3) }}{{ len (randAscii 4) }}{{ len (randNumeric 5) }}{{ len (randBytes 6) }}`,
		`{{ encryptAES "k" "t" | decryptAES "k" }}`,
	}
	sprigTmpl := func(src string) (*template.Template, error) {
		return template.New("t").Funcs(sprig.TxtFuncMap()).Parse(src)
	}
	params := map[string]any{"name": "a"}
	for _, src := range tests {
		want, err := sprigTmpl(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		var wantOut strings.Builder
		if err := want.Execute(&wantOut, params); err != nil {
			t.Fatalf("sprig: %s: %v", src, err)
		}
		got, err := RenderString(src, params, Options{GoTemplate: true})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got != wantOut.String() {
			t.Errorf("%s\n got %q\nwant %q", src, got, wantOut.String())
		}
	}
}

// TestUntilStepDoesNotOverflow: sprig's untilStep loops forever (appending until memory runs
// out) when the step after the last item overflows.
func TestUntilStepDoesNotOverflow(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{`{{ untilStep -9223372036854775803 -9223372036854775807 -10 }}`, "[-9223372036854775803]"},
		{`{{ untilStep 9223372036854775800 9223372036854775807 5 }}`, "[9223372036854775800 9223372036854775805]"},
		{`{{ untilStep -9223372036854775808 -9223372036854775807 -9223372036854775808 }}`, "[]"},
		{`{{ seq 9223372036854775806 9223372036854775807 }}`, ""},
	} {
		got, err := RenderString(tt.src, map[string]any{"a": 1}, Options{GoTemplate: true})
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.src, got, err, tt.want)
		}
	}
}

// TestGuardsKeepOutput renders templates where set runs, so that every printed value goes
// through the guard: the output is what text/template prints without it.
func TestGuardsKeepOutput(t *testing.T) {
	src := `{{ $_ := set $ "x" 1 }}{{ .missing }}|{{ .nothing }}|{{ .x }}|{{ $ | len }}|{{ "lit" }}|{{ 3 }}|` +
		`{{ range $i, $v := .list }}{{ $i }}={{ . }}{{ end }}|{{ with .m }}{{ .k }}{{ end }}|{{ if .x }}{{ .x }}{{ else }}no{{ end }}|` +
		`{{ (list 1 2) }}|{{ first .list }}|{{ default "d" .missing }}|{{ .m }}`
	params := func() map[string]any {
		return map[string]any{"nothing": nil, "list": []any{"a", "b"}, "m": map[string]any{"k": "v"}}
	}
	want, err := template.New("t").Funcs(sprig.TxtFuncMap()).Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	var wantOut strings.Builder
	if err := want.Execute(&wantOut, params()); err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(Options{GoTemplate: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.RenderString(src, params())
	if err != nil || got != wantOut.String() {
		t.Errorf("guarded: %q, %v\n want: %q", got, err, wantOut.String())
	}
	// Once a string of the Engine calls set, the others are guarded too: set may have changed
	// their parameters.
	plain, err := e.parse(`{{ .list }}`)
	if err != nil {
		t.Fatal(err)
	}
	if plain.mutates || plain.template() == plain.plain {
		t.Errorf("a string of an Engine that has seen set is not guarded")
	}
	if got, err := e.RenderString(`{{ .list }}-{{ .missing }}`, params()); err != nil || got != "[a b]-<no value>" {
		t.Errorf("guarded: %q, %v", got, err)
	}
}

// TestEveryFunctionIsBounded fails when a template function is neither bounded nor known to
// make nothing large, as when a new sprig version adds one.
func TestEveryFunctionIsBounded(t *testing.T) {
	// These return a constant-size value, a number, a boolean, a part of an argument or an
	// argument, or time values; none makes anything that grows with an argument.
	small := []string{
		"hello", "ago", "dateModify", "date_modify", "duration", "durationRound", "htmlDate", "htmlDateInZone",
		"must_date_modify", "mustDateModify", "mustToDate", "now", "toDate", "unixEpoch", "trunc", "trim", "substr",
		"trimall", "trimAll", "trimSuffix", "trimPrefix", "contains", "hasPrefix", "hasSuffix", "plural", "sha1sum",
		"sha256sum", "sha512sum", "adler32sum", "atoi", "int64", "int", "float64", "toDecimal", "add1", "add", "sub",
		"div", "mod", "mul", "randInt", "add1f", "addf", "subf", "divf", "mulf", "biggest", "max", "min", "maxf",
		"minf", "ceil", "floor", "round", "default", "empty", "coalesce", "all", "any", "ternary", "typeOf", "typeIs",
		"typeIsLike", "kindOf", "kindIs", "deepEqual", "base", "ext", "isAbs", "osBase", "osExt", "osIsAbs", "get",
		"unset", "hasKey", "first", "mustFirst", "last", "mustLast", "has", "mustHas", "slice", "mustSlice", "dig",
		"uuidv4", "semver", "semverCompare", "fail",
	}
	bounded := boundedFuncs(nil)
	for _, name := range slices.Sorted(maps.Keys(funcMap())) {
		if _, ok := bounded[name]; !ok && !slices.Contains(small, name) {
			t.Errorf("template function %q is not bounded", name)
		}
	}
	for name, f := range bounded {
		if funcMap()[name] == nil {
			t.Errorf("bounded function %q is not in the function map", name)
		}
		if ft := fmt.Sprintf("%T", f); !strings.Contains(ft, "error") && !strings.HasPrefix(name, "gen") &&
			name != "bcrypt" && name != "htpasswd" && name != "derivePassword" {
			t.Errorf("bounded function %q cannot fail: %s", name, ft)
		}
	}
}
