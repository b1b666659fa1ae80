package templates

import (
	"encoding/json"
	"fmt"

	"dario.cat/mergo"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Merge applies a generator's template override onto the ApplicationSet's template, with Argo
// CD's semantics: every field the override sets (non-empty) wins, everything else comes from
// base. Labels and annotations are merged key by key, the override winning; lists (finalizers,
// syncOptions, ...) are taken whole from the override when it sets them; the override's spec is
// partial and is merged the same way, field by field. As in Argo CD, a zero value in the
// override (false, 0, "") cannot clear a value of base, and unknown spec fields (such as Argo
// CD's `info`) are ignored.
//
// A nil override returns a copy of base. Errors are *FieldError whose Field ("template.spec")
// is relative to the generator.
func Merge(base navarchv1.ApplicationSetTemplate, override *navarchv1.GeneratorTemplate) (navarchv1.ApplicationSetTemplate, error) {
	if override == nil {
		return *base.DeepCopy(), nil
	}
	merged := navarchv1.ApplicationSetTemplate{Metadata: *override.Metadata.DeepCopy()}
	if override.Spec != nil && len(override.Spec.Raw) > 0 {
		if err := json.Unmarshal(override.Spec.Raw, &merged.Spec); err != nil {
			return navarchv1.ApplicationSetTemplate{}, &FieldError{Field: "template.spec", Err: err}
		}
	}
	if err := mergo.Merge(&merged, *base.DeepCopy()); err != nil {
		return navarchv1.ApplicationSetTemplate{}, &FieldError{Field: "template", Err: fmt.Errorf("merge onto the ApplicationSet's template: %w", err)}
	}
	return merged, nil
}
