package templates

import (
	"fmt"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Options selects the rendering mode and the Budget rendering is charged to.
type Options struct {
	// GoTemplate selects Go text/template with sprig instead of fasttemplate substitution.
	GoTemplate bool
	// GoTemplateOptions are text/template options, e.g. "missingkey=error". They only apply to
	// goTemplate mode, as in Argo CD.
	GoTemplateOptions []string
	// Budget, if not nil, bounds the total time and bytes of everything rendered with these
	// options: one pass over an ApplicationSet. Without one, every render is still bounded
	// (MaxFieldSize and the other limits) but there is no time limit and no limit on the sum.
	Budget *Budget
}

// OptionsFor returns the options an ApplicationSet's spec asks for.
func OptionsFor(spec *navarchv1.ApplicationSetSpec) Options {
	opts := Options{GoTemplate: spec.GoTemplate}
	for _, o := range spec.GoTemplateOptions {
		opts.GoTemplateOptions = append(opts.GoTemplateOptions, string(o))
	}
	return opts
}

// Validate reports an option text/template does not know (text/template itself panics on
// them).
func (o Options) Validate() error {
	for i, opt := range o.GoTemplateOptions {
		switch opt {
		case "missingkey=default", "missingkey=invalid", "missingkey=zero", "missingkey=error":
		default:
			return &FieldError{
				Field: fmt.Sprintf("spec.goTemplateOptions[%d]", i),
				Err:   fmt.Errorf("unsupported option %q: want missingkey=default, missingkey=invalid, missingkey=zero or missingkey=error", opt),
			}
		}
	}
	return nil
}
