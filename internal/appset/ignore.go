package appset

import (
	"encoding/json"
	"fmt"
	"slices"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/jsontree"
)

// IgnoreDifferences makes desired keep the live value of every field that
// spec.ignoreApplicationDifferences lists for it, so hand edits of those fields survive. A
// field ignored but absent from the live Application is removed from desired too. Pointers and
// jq paths are relative to the Application object, e.g. /spec/source/targetRevision.
func IgnoreDifferences(rules []navarchv1.ApplicationSetIgnoreDifferences, desired, live *navarchv1.Application) error {
	applies := func(r navarchv1.ApplicationSetIgnoreDifferences) bool { return r.Name == "" || r.Name == desired.Name }
	if !slices.ContainsFunc(rules, applies) {
		return nil
	}
	want, err := toTree(desired)
	if err != nil {
		return err
	}
	have, err := toTree(live)
	if err != nil {
		return err
	}
	for i, r := range rules {
		if !applies(r) {
			continue // i stays the rule's index in the spec, for error messages
		}
		for j, p := range r.JSONPointers {
			path, err := jsontree.ParsePointer(p)
			if err != nil {
				return fmt.Errorf("spec.ignoreApplicationDifferences[%d].jsonPointers[%d]: %w", i, j, err)
			}
			jsontree.Copy(want, have, path)
		}
		for j, expr := range r.JQPathExpressions {
			q, err := jsontree.CompileJQ(expr)
			if err != nil {
				return fmt.Errorf("spec.ignoreApplicationDifferences[%d].jqPathExpressions[%d]: %w", i, j, err)
			}
			jsontree.CopyAll(want, have, q.Paths(have, want))
		}
	}
	data, err := json.Marshal(want)
	if err != nil {
		return err
	}
	out := &navarchv1.Application{}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("spec.ignoreApplicationDifferences: the result is not a valid Application: %w", err)
	}
	desired.Spec, desired.Labels, desired.Annotations = out.Spec, out.Labels, out.Annotations
	return nil
}

func toTree(app *navarchv1.Application) (map[string]any, error) {
	data, err := json.Marshal(struct {
		Metadata map[string]any            `json:"metadata"`
		Spec     navarchv1.ApplicationSpec `json:"spec"`
	}{
		Metadata: map[string]any{"labels": app.Labels, "annotations": app.Annotations},
		Spec:     app.Spec,
	})
	if err != nil {
		return nil, err
	}
	var tree map[string]any
	return tree, json.Unmarshal(data, &tree)
}
