package templates

import (
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Field paths of the template, as errors name them.
const (
	fieldTmpl  = "spec.template"
	fieldMeta  = "spec.template.metadata"
	fieldSpec  = "spec.template.spec"
	fieldPatch = "spec.templatePatch"
)

// Template is an ApplicationSet template compiled for one mode: every string is parsed once, so
// that Render only substitutes. A Template is immutable and safe for concurrent use.
type Template struct {
	opts Options
	// source is the template as given, returned unrendered for an empty parameter set.
	source navarchv1.ApplicationSetTemplate

	name, namespace text
	labels          []entry
	annotations     []entry
	finalizers      []text
	spec            specRenderer

	// patch applies the templatePatch; nil without one.
	patch *patcher
	// size is the length of the template's strings, about what a rendered Application
	// takes besides what is rendered.
	size int
}

// entry is one templated map entry; key and value are both templated.
type entry struct {
	// field is the entry's path, e.g. spec.template.metadata.labels[team], with the key as
	// written.
	field      string
	key, value text
}

// Compile parses the template and the optional templatePatch for the mode opts selects.
// Errors are *FieldError naming the field, e.g. a Go template that does not parse, a goTemplate
// using env, or a fasttemplate string with an unclosed "{{".
func Compile(tmpl navarchv1.ApplicationSetTemplate, patch *string, opts Options) (*Template, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.GoTemplateOptions = slices.Clone(opts.GoTemplateOptions)
	return compile(newCompiler(opts, nil), tmpl, patch)
}

func compile(c *compiler, tmpl navarchv1.ApplicationSetTemplate, patch *string) (*Template, error) {
	t := &Template{opts: c.opts, source: *tmpl.DeepCopy()}
	meta := &t.source.Metadata
	var err error
	if t.name, err = c.text(meta.Name); err != nil {
		return nil, &FieldError{Field: fieldMeta + ".name", Err: err}
	}
	if t.namespace, err = c.text(meta.Namespace); err != nil {
		return nil, &FieldError{Field: fieldMeta + ".namespace", Err: err}
	}
	if t.labels, err = compileEntries(c, meta.Labels, fieldMeta+".labels"); err != nil {
		return nil, err
	}
	if t.annotations, err = compileEntries(c, meta.Annotations, fieldMeta+".annotations"); err != nil {
		return nil, err
	}
	for i, f := range meta.Finalizers {
		x, err := c.text(f)
		if err != nil {
			return nil, &FieldError{Field: fieldMeta + ".finalizers[" + itoa(i) + "]", Err: err}
		}
		t.finalizers = append(t.finalizers, x)
	}
	if t.spec, err = compileSpec(c, &t.source.Spec, fieldSpec); err != nil {
		return nil, err
	}
	if patch != nil && *patch != "" {
		x, err := c.text(*patch)
		if err != nil {
			return nil, &FieldError{Field: fieldPatch, Err: err}
		}
		if t.patch, err = newPatcher(x); err != nil {
			return nil, &FieldError{Field: fieldPatch, Err: err}
		}
	}
	t.size = c.size
	return t, nil
}

func compileEntries(c *compiler, m map[string]string, field string) ([]entry, error) {
	if m == nil {
		return nil, nil
	}
	keys := slices.Sorted(maps.Keys(m))
	entries := make([]entry, 0, len(keys))
	for _, k := range keys {
		e := entry{field: field + "[" + k + "]"}
		var err error
		if e.key, err = c.text(k); err != nil {
			return nil, &FieldError{Field: e.field, Err: err}
		}
		if e.value, err = c.text(m[k]); err != nil {
			return nil, &FieldError{Field: e.field, Err: err}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// Options returns the options the template was compiled with.
func (t *Template) Options() Options {
	o := t.opts
	o.GoTemplateOptions = slices.Clone(o.GoTemplateOptions)
	return o
}

var applicationTypeMeta = metav1.TypeMeta{
	APIVersion: navarchv1.GroupVersion.String(),
	Kind:       "Application",
}

// scratch holds per-render state.
type scratch struct {
	out  output
	json []byte
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Render renders one parameter set into a new Application: its TypeMeta is navarch.io/v1alpha1
// Application, its metadata (name, namespace, labels, annotations, finalizers) comes from the
// template's metadata and its spec from the template's spec, every string rendered with params;
// then the templatePatch, if any, is rendered with params and merged on top.
//
// In fasttemplate mode params is flat (keys such as "path.basename"); in goTemplate mode it is
// nested. As Argo CD does, an empty parameter set leaves the template unrendered (the
// templatePatch is still rendered and applied).
//
// Rendering is bounded (see MaxFieldSize and the other limits, and Options.Budget); a limit
// that is exceeded is a *LimitError inside the *FieldError of the field being rendered, or of
// spec.template when the Budget is spent.
//
// Errors are *FieldError naming the field; wrap them with WithParamSet to say which parameter
// set failed.
func (t *Template) Render(params map[string]any) (*navarchv1.Application, error) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	if err := s.out.begin(t.opts.Budget); err != nil {
		return nil, &FieldError{Field: fieldTmpl, Err: err}
	}

	app, err := t.renderWithPatch(params, s)
	// The budget counts what was rendered and how long it took, failed or not.
	if endErr := s.out.end(t.size); err == nil && endErr != nil {
		err = &FieldError{Field: fieldTmpl, Err: endErr}
	}
	if err != nil {
		return nil, err
	}
	return app, nil
}

func (t *Template) renderWithPatch(params map[string]any, s *scratch) (*navarchv1.Application, error) {
	var app *navarchv1.Application
	if len(params) == 0 {
		app = t.unrendered()
	} else {
		var err error
		if app, err = t.render(params, s); err != nil {
			return nil, err
		}
	}
	if t.patch == nil {
		return app, nil
	}
	return t.patch.apply(app, params, s)
}

func (t *Template) unrendered() *navarchv1.Application {
	src := t.source.DeepCopy()
	return &navarchv1.Application{
		TypeMeta: applicationTypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:        src.Metadata.Name,
			Namespace:   src.Metadata.Namespace,
			Labels:      src.Metadata.Labels,
			Annotations: src.Metadata.Annotations,
			Finalizers:  src.Metadata.Finalizers,
		},
		Spec: src.Spec,
	}
}

func (t *Template) render(params map[string]any, s *scratch) (*navarchv1.Application, error) {
	app := &navarchv1.Application{TypeMeta: applicationTypeMeta}
	var err error
	if app.Name, err = t.name.render(params, &s.out); err != nil {
		return nil, &FieldError{Field: fieldMeta + ".name", Err: err}
	}
	if app.Namespace, err = t.namespace.render(params, &s.out); err != nil {
		return nil, &FieldError{Field: fieldMeta + ".namespace", Err: err}
	}
	if app.Labels, err = renderEntries(t.labels, params, &s.out); err != nil {
		return nil, err
	}
	if app.Annotations, err = renderEntries(t.annotations, params, &s.out); err != nil {
		return nil, err
	}
	if t.finalizers != nil {
		app.Finalizers = make([]string, len(t.finalizers))
		for i := range t.finalizers {
			if app.Finalizers[i], err = t.finalizers[i].render(params, &s.out); err != nil {
				return nil, &FieldError{Field: fieldMeta + ".finalizers[" + itoa(i) + "]", Err: err}
			}
		}
	}
	if err := t.spec.render(&app.Spec, &t.source.Spec, params, s); err != nil {
		return nil, err
	}
	return app, nil
}

func renderEntries(entries []entry, params map[string]any, o *output) (map[string]string, error) {
	if entries == nil {
		return nil, nil
	}
	m := make(map[string]string, len(entries))
	for i := range entries {
		e := &entries[i]
		k, err := e.key.render(params, o)
		if err != nil {
			return nil, &FieldError{Field: e.field, Err: err}
		}
		v, err := e.value.render(params, o)
		if err != nil {
			return nil, &FieldError{Field: e.field, Err: err}
		}
		m[k] = v
	}
	return m, nil
}
