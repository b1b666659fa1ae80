package templates

import (
	"slices"
	"strings"
	"sync"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// engineCacheSize bounds the parsed templates an Engine keeps; when full, the cache starts over.
const engineCacheSize = 1024

// Engine renders strings in one mode, parsing each distinct Go template once. Generators use it
// to template elementsYaml, values and a matrix's later children with earlier parameters. An
// Engine is safe for concurrent use.
type Engine struct {
	opts   Options
	parser *goParser

	mu    sync.RWMutex
	cache map[string]parsed
}

type parsed struct {
	tmpl *goText
	err  error
}

// NewEngine returns an Engine for opts, or an error if an option is not supported.
func NewEngine(opts Options) (*Engine, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.GoTemplateOptions = slices.Clone(opts.GoTemplateOptions)
	return &Engine{opts: opts, parser: newGoParser(opts), cache: map[string]parsed{}}, nil
}

// Options returns the Engine's options.
func (e *Engine) Options() Options {
	o := e.opts
	o.GoTemplateOptions = slices.Clone(o.GoTemplateOptions)
	return o
}

// RenderString renders s with params: `{{ key }}` substitution in fasttemplate mode, Go
// text/template in goTemplate mode. The result may be at most MaxFieldSize bytes and is
// charged to the Engine's Budget.
func (e *Engine) RenderString(s string, params map[string]any) (string, error) {
	if !e.opts.GoTemplate {
		return renderFastCharged(s, params, e.opts.Budget)
	}
	if !strings.Contains(s, openTag) {
		return s, nil
	}
	t, err := e.parse(s)
	if err != nil {
		return "", err
	}
	return renderString(t, params, e.opts.Budget)
}

// Compile is Compile with the Engine's options, sharing its cache of parsed templates.
func (e *Engine) Compile(tmpl navarchv1.ApplicationSetTemplate, patch *string) (*Template, error) {
	var parse parser
	if e.opts.GoTemplate {
		parse = e.parse
	}
	return compile(newCompiler(e.opts, parse), tmpl, patch)
}

func (e *Engine) parse(s string) (*goText, error) {
	e.mu.RLock()
	p, ok := e.cache[s]
	e.mu.RUnlock()
	if ok {
		return p.tmpl, p.err
	}
	t, err := e.parser.parse(s)
	e.mu.Lock()
	if len(e.cache) >= engineCacheSize {
		clear(e.cache)
	}
	e.cache[s] = parsed{tmpl: t, err: err}
	e.mu.Unlock()
	return t, err
}

// RenderString renders one string with params in the mode opts selects. It parses s every
// time; use an Engine to render many strings.
func RenderString(s string, params map[string]any, opts Options) (string, error) {
	if err := opts.Validate(); err != nil {
		return "", err
	}
	if !opts.GoTemplate {
		return renderFastCharged(s, params, opts.Budget)
	}
	if !strings.Contains(s, openTag) {
		return s, nil
	}
	t, err := newGoParser(opts).parse(s)
	if err != nil {
		return "", err
	}
	return renderString(t, params, opts.Budget)
}

// renderFastCharged is renderFast, charging budget for the result.
func renderFastCharged(s string, params map[string]any, budget *Budget) (string, error) {
	r, err := renderFast(s, params, MaxFieldSize)
	if err != nil {
		return "", err
	}
	if err := budget.charge(len(r)); err != nil {
		return "", err
	}
	return r, nil
}
