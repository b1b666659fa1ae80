package helm

import (
	"errors"
	"testing"
)

func TestNewTemplateError(t *testing.T) {
	tests := []struct {
		name, in string
		want     TemplateError
	}{{
		name: "parse error",
		in:   "parse error at (web/templates/a.yaml:3): unclosed action",
		want: TemplateError{File: "templates/a.yaml", Line: 3, Message: "unclosed action"},
	}, {
		name: "parse error without a line",
		in:   "parse error in (web/templates/a.yaml): boom",
		want: TemplateError{File: "templates/a.yaml", Message: "boom"},
	}, {
		name: "required",
		in:   "execution error at (web/charts/db/templates/s.yaml:7:12): password is required",
		want: TemplateError{File: "charts/db/templates/s.yaml", Line: 7, Message: "password is required"},
	}, {
		name: "text/template's own message",
		in:   `template: web/templates/a.yaml:12:3: executing "web/templates/a.yaml" at <.Values.x.y>: nil pointer evaluating interface {}.y`,
		want: TemplateError{File: "templates/a.yaml", Line: 12, Message: `executing "templates/a.yaml" at <.Values.x.y>: nil pointer evaluating interface {}.y`},
	}, {
		name: "a list of locations",
		in: "web/templates/a.yaml:12:3\n  executing \"web/templates/a.yaml\" at <include \"x\" .>:\n    error calling include:\n" +
			"web/templates/_helpers.tpl:3:4\n  executing \"x\" at <.Values.a.b>:\n    nil pointer evaluating interface {}.b\n",
		want: TemplateError{File: "templates/a.yaml", Line: 12, Message: `executing "templates/a.yaml" at <include "x" .>: error calling include: templates/_helpers.tpl:3: executing "x" at <.Values.a.b>: nil pointer evaluating interface {}.b`},
	}, {
		name: "anything else",
		in:   "rendering template failed: runtime error: index out of range",
		want: TemplateError{Message: "rendering template failed: runtime error: index out of range"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := newTemplateError("web", errors.New(tt.in))
			got, ok := errors.AsType[*TemplateError](err)
			if !ok || *got != tt.want {
				t.Errorf("newTemplateError(%q):\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestTemplateErrorMessage(t *testing.T) {
	for _, tt := range []struct {
		err  TemplateError
		want string
	}{
		{TemplateError{File: "templates/a.yaml", Line: 3, Message: "boom"}, "templates/a.yaml:3: boom"},
		{TemplateError{File: "templates/a.yaml", Message: "boom"}, "templates/a.yaml: boom"},
		{TemplateError{Message: "boom"}, "boom"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.err, got, tt.want)
		}
	}
}

func FuzzNewTemplateError(f *testing.F) {
	f.Add("parse error at (web/templates/a.yaml:3): unclosed action")
	f.Add("web/templates/a.yaml:12:3\n  executing \"web/templates/a.yaml\" at <.Values.a>:\n    boom\n")
	f.Add("template: web/templates/a.yaml:1:2: boom")
	f.Fuzz(func(t *testing.T, msg string) {
		err := newTemplateError("web", errors.New(msg))
		terr, ok := errors.AsType[*TemplateError](err)
		if !ok {
			t.Fatalf("not a *TemplateError: %v", err)
		}
		if terr.Line < 0 {
			t.Errorf("negative line in %+v", terr)
		}
		_ = err.Error()
	})
}
