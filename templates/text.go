package templates

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"text/template"
)

// text is one templatable string, compiled for its mode: a literal (nothing to substitute), a
// fasttemplate string or a parsed Go template.
type text struct {
	src  string
	fast *fastText
	tmpl *template.Template
}

func (x *text) templated() bool { return x.fast != nil || x.tmpl != nil }

// render returns the rendered string; buf is scratch space.
func (x *text) render(params map[string]any, buf *bytes.Buffer) (string, error) {
	switch {
	case x.fast != nil:
		return x.fast.render(params), nil
	case x.tmpl != nil:
		if err := executeInto(x.tmpl, params, buf); err != nil {
			return "", err
		}
		return buf.String(), nil
	default:
		return x.src, nil
	}
}

// appendJSON appends the rendered string, escaped for the inside of a JSON string, to dst.
func (x *text) appendJSON(dst []byte, params map[string]any, buf *bytes.Buffer) ([]byte, error) {
	switch {
	case x.fast != nil:
		return x.fast.appendJSON(dst, params), nil
	case x.tmpl != nil:
		if err := executeInto(x.tmpl, params, buf); err != nil {
			return dst, err
		}
		return appendJSONEscaped(dst, bytesString(buf.Bytes())), nil
	default:
		return appendJSONEscaped(dst, x.src), nil
	}
}

// MaxRenderedSize is the longest string a goTemplate may render, a little over what fits in
// a Kubernetes object; a template that writes more (a runaway range, say) fails instead of
// exhausting memory.
const MaxRenderedSize = 2 << 20

var errTooLarge = fmt.Errorf("the rendered value exceeds %d bytes", MaxRenderedSize)

// limitedWriter is a bytes.Buffer that refuses to grow beyond MaxRenderedSize.
type limitedWriter struct{ buf *bytes.Buffer }

func (w limitedWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > MaxRenderedSize {
		return 0, errTooLarge
	}
	return w.buf.Write(p)
}

// executeInto executes t with params into buf, which it resets first.
func executeInto(t *template.Template, params map[string]any, buf *bytes.Buffer) error {
	buf.Reset()
	if err := t.Execute(limitedWriter{buf}, params); err != nil {
		return cleanExecError(err)
	}
	return nil
}

// parseGo parses one goTemplate string in a template set of its own, as Argo CD does.
func parseGo(src string, options []string) (*template.Template, error) {
	t := template.New(tmplName).Funcs(funcMap())
	for _, o := range options {
		t.Option(o)
	}
	t, err := t.Parse(src)
	if err != nil {
		return nil, cleanParseError(err, src)
	}
	return t, nil
}

// goParser parses goTemplate strings. Installing sprig's ~200 functions into a new template
// costs far more than parsing a short string, so strings that cannot refer to other templates
// are parsed as templates sharing one function table. They all bear the same name, so the
// shared set never grows, and a string that uses define, block or template gets a set of its
// own: one field's templates stay invisible to the others, as in Argo CD.
type goParser struct {
	options []string
	once    sync.Once
	base    *template.Template
}

func (p *goParser) parse(src string) (*template.Template, error) {
	if strings.Contains(src, "define") || strings.Contains(src, "block") || strings.Contains(src, "template") {
		return parseGo(src, p.options)
	}
	p.once.Do(func() { p.base = template.New(tmplName).Funcs(funcMap()) })
	t := p.base.New(tmplName)
	for _, o := range p.options {
		t.Option(o)
	}
	if _, err := t.Parse(src); err != nil {
		return nil, cleanParseError(err, src)
	}
	return t, nil
}

// parser parses Go templates, possibly through a cache.
type parser func(src string) (*template.Template, error)

// compiler turns strings into texts for one mode.
type compiler struct {
	opts  Options
	parse parser
}

// newCompiler returns a compiler that parses each distinct Go template once, through parse if
// it is not nil.
func newCompiler(opts Options, parse parser) *compiler {
	if parse == nil && opts.GoTemplate {
		gp := &goParser{options: opts.GoTemplateOptions}
		seen := map[string]*template.Template{}
		parse = func(src string) (*template.Template, error) {
			if t, ok := seen[src]; ok {
				return t, nil
			}
			t, err := gp.parse(src)
			if err != nil {
				return nil, err
			}
			seen[src] = t
			return t, nil
		}
	}
	return &compiler{opts: opts, parse: parse}
}

func (c *compiler) text(s string) (text, error) {
	if c.opts.GoTemplate {
		// A Go template without an action renders as itself.
		if !strings.Contains(s, openTag) {
			return text{src: s}, nil
		}
		t, err := c.parse(s)
		if err != nil {
			return text{}, err
		}
		return text{src: s, tmpl: t}, nil
	}
	if !isFastTemplated(s) {
		return text{src: s}, nil
	}
	f, err := compileFast(s)
	if err != nil {
		return text{}, err
	}
	return text{src: s, fast: f}, nil
}
