package templates

import (
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"text/template/parse"
)

// text is one templatable string, compiled for its mode: a literal (nothing to substitute), a
// fasttemplate string or a parsed Go template.
type text struct {
	src  string
	fast *fastText
	tmpl *goText
}

func (x *text) templated() bool { return x.fast != nil || x.tmpl != nil }

// render returns the rendered string, rendered through o, which bounds it.
func (x *text) render(params map[string]any, o *output) (string, error) {
	switch {
	case x.fast != nil:
		o.next()
		s, ok := x.fast.render(params, o.max)
		if !ok {
			return "", o.tooLarge()
		}
		o.done(len(s))
		return s, nil
	case x.tmpl != nil:
		if err := o.execute(x.tmpl.template(), params); err != nil {
			return "", err
		}
		return o.buf.String(), nil
	default:
		return x.src, nil
	}
}

// appendJSON appends the rendered string, escaped for the inside of a JSON string, to dst.
func (x *text) appendJSON(dst []byte, params map[string]any, o *output) ([]byte, error) {
	switch {
	case x.fast != nil:
		o.next()
		out, n, ok := x.fast.appendJSON(dst, params, o.max)
		if !ok {
			return dst, o.tooLarge()
		}
		o.done(n)
		return out, nil
	case x.tmpl != nil:
		if err := o.execute(x.tmpl.template(), params); err != nil {
			return dst, err
		}
		return appendJSONEscaped(dst, bytesString(o.buf.Bytes())), nil
	default:
		return appendJSONEscaped(dst, x.src), nil
	}
}

// goText is a string parsed as a Go template, ready to run in bounds (see instrument).
type goText struct {
	src    string
	parser *goParser
	// plain is the template without guards.
	plain *template.Template
	// mutates says the string itself calls set or merge.
	mutates bool

	guardOnce sync.Once
	guarded   *template.Template
}

// template returns the template to run: with guards once this string, or any other string
// of the same parser, calls set or merge, since those may have changed the parameters.
func (g *goText) template() *template.Template {
	if !g.mutates && !g.parser.mutators.Load() {
		return g.plain
	}
	g.guardOnce.Do(func() {
		// The source parsed before, so it parses again.
		g.guarded, _, _ = g.parser.parseTemplate(g.src, true)
	})
	return g.guarded
}

// renderString renders one Go template string with params, as one render of budget.
func renderString(g *goText, params map[string]any, budget *Budget) (string, error) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	if err := s.out.begin(budget); err != nil {
		return "", err
	}
	err := s.out.execute(g.template(), params)
	// The budget counts what was rendered and how long it took, failed or not.
	if endErr := s.out.end(0); err == nil {
		err = endErr
	}
	if err != nil {
		return "", err
	}
	return s.out.buf.String(), nil
}

// goParser parses goTemplate strings. Installing sprig's ~200 functions into a new template
// costs far more than parsing a short string, so strings that cannot refer to other templates
// are parsed as templates sharing one function table. They all bear the same name, so the
// shared set never grows, and a string that uses define, block or template gets a set of its
// own: one field's templates stay invisible to the others, as in Argo CD.
type goParser struct {
	options []string
	// budget, if not nil, is charged by the template functions.
	budget *Budget
	once   sync.Once
	base   *template.Template
	// mutators is set once a string that calls set or merge has been parsed.
	mutators atomic.Bool
}

func newGoParser(opts Options) *goParser {
	return &goParser{options: opts.GoTemplateOptions, budget: opts.Budget}
}

// newTemplate returns an empty template with the parser's functions and options.
func (p *goParser) newTemplate() *template.Template {
	t := template.New(tmplName).Funcs(funcMap())
	if p.budget != nil {
		t.Funcs(p.budget.funcMap())
	}
	return t
}

func (p *goParser) parse(src string) (*goText, error) {
	t, mutates, err := p.parseTemplate(src, false)
	if err != nil {
		return nil, err
	}
	if mutates {
		p.mutators.Store(true)
	}
	return &goText{src: src, parser: p, plain: t, mutates: mutates}, nil
}

// parseTemplate parses src, prepared to run in bounds, with guards if asked; it reports
// whether src calls set or merge.
func (p *goParser) parseTemplate(src string, guards bool) (*template.Template, bool, error) {
	var t *template.Template
	var trees []*parse.Tree
	// Only a string with a set of its own can call templates.
	own := strings.Contains(src, "define") || strings.Contains(src, "block") || strings.Contains(src, "template")
	if own {
		t = p.newTemplate()
		for _, o := range p.options {
			t.Option(o)
		}
		if _, err := t.Parse(src); err != nil {
			return nil, false, cleanParseError(err, src)
		}
		for _, named := range t.Templates() {
			trees = append(trees, named.Tree)
		}
	} else {
		p.once.Do(func() { p.base = p.newTemplate() })
		t = p.base.New(tmplName)
		for _, o := range p.options {
			t.Option(o)
		}
		if _, err := t.Parse(src); err != nil {
			return nil, false, cleanParseError(err, src)
		}
		trees = append(trees, t.Tree)
	}
	mutates := false
	for _, tree := range trees {
		addTicks(tree, own)
		if guards {
			addGuards(tree)
		}
		mutates = mutates || callsMutator(tree)
	}
	return t, mutates, nil
}

// parser parses Go templates, possibly through a cache.
type parser func(src string) (*goText, error)

// compiler turns strings into texts for one mode.
type compiler struct {
	opts  Options
	parse parser
	// size adds up the strings compiled, about the size of what they belong to.
	size int
}

// newCompiler returns a compiler that parses each distinct Go template once, through parse if
// it is not nil.
func newCompiler(opts Options, parse parser) *compiler {
	if parse == nil && opts.GoTemplate {
		gp := newGoParser(opts)
		seen := map[string]*goText{}
		parse = func(src string) (*goText, error) {
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
	c.size += len(s)
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
