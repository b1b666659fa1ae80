package diff

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/jsontree"
)

// Ignore is a compiled set of ignoreDifferences rules. The nil *Ignore is valid and ignores
// nothing. It is not modified after CompileIgnore, so it may be shared between goroutines.
type Ignore struct {
	rules []rule
}

// rule is one compiled spec.ignoreDifferences entry.
type rule struct {
	group, kind, name, namespace string
	pointers                     [][]any
	jq                           []*jsontree.JQ
	managers                     []string
}

// CompileIgnore parses every JSON pointer and jq expression of rules once, so that comparing
// many objects costs no parsing. Errors name the field, e.g.
// `spec.ignoreDifferences[1].jqPathExpressions[0]: ...`.
func CompileIgnore(rules []navarchv1.ResourceIgnoreDifferences) (*Ignore, error) {
	ig := &Ignore{rules: make([]rule, 0, len(rules))}
	var errs []error
	for i, r := range rules {
		field := fmt.Sprintf("spec.ignoreDifferences[%d]", i)
		c := rule{group: r.Group, kind: r.Kind, name: r.Name, namespace: r.Namespace, managers: r.ManagedFieldsManagers}
		if r.Kind == "" {
			errs = append(errs, fmt.Errorf("%s.kind: must be set", field))
		}
		if len(r.JSONPointers)+len(r.JQPathExpressions)+len(r.ManagedFieldsManagers) == 0 {
			errs = append(errs, fmt.Errorf("%s: one of jsonPointers, jqPathExpressions or managedFieldsManagers must be set", field))
		}
		for j, p := range r.JSONPointers {
			path, err := jsontree.ParsePointer(p)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s.jsonPointers[%d]: %w", field, j, err))
			case len(path) == 0:
				errs = append(errs, fmt.Errorf("%s.jsonPointers[%d]: the empty pointer is the whole object; point at a field", field, j))
			default:
				c.pointers = append(c.pointers, path)
			}
		}
		for j, expr := range r.JQPathExpressions {
			q, err := jsontree.CompileJQ(expr)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.jqPathExpressions[%d]: %w", field, j, err))
				continue
			}
			c.jq = append(c.jq, q)
		}
		for j, m := range r.ManagedFieldsManagers {
			if m == "" {
				errs = append(errs, fmt.Errorf("%s.managedFieldsManagers[%d]: must not be empty", field, j))
			}
		}
		ig.rules = append(ig.rules, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ig, nil
}

// Matches reports whether any rule selects the object: group and kind must be equal (the
// empty group is the core group), an empty name or namespace in a rule matches any.
func (ig *Ignore) Matches(gvk schema.GroupVersionKind, namespace, name string) bool {
	return len(ig.matching(gvk, namespace, name)) > 0
}

// NeedsManagedFields reports whether a rule selecting the object lists managedFieldsManagers.
// The caller then fetches the live object with metadata.managedFields, which its cache
// strips, before calling Compare.
func (ig *Ignore) NeedsManagedFields(gvk schema.GroupVersionKind, namespace, name string) bool {
	return slices.ContainsFunc(ig.matching(gvk, namespace, name), func(r *rule) bool { return len(r.managers) > 0 })
}

// matching returns the rules that select the object; none for the nil Ignore.
func (ig *Ignore) matching(gvk schema.GroupVersionKind, namespace, name string) []*rule {
	if ig == nil {
		return nil
	}
	var out []*rule
	for i := range ig.rules {
		r := &ig.rules[i]
		if r.group == gvk.Group && r.kind == gvk.Kind &&
			(r.name == "" || r.name == name) && (r.namespace == "" || r.namespace == namespace) {
			out = append(out, r)
		}
	}
	return out
}

// matchingObject returns the rules that select obj.
func (ig *Ignore) matchingObject(obj *unstructured.Unstructured) []*rule {
	if obj == nil {
		return nil
	}
	return ig.matching(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
}

// RespectLive makes desired keep live's value of every field the rules selecting desired
// ignore through jsonPointers and jqPathExpressions, for the RespectIgnoreDifferences=true
// sync option: an apply then leaves those fields as they are in the cluster. A field absent
// from live is removed from desired. jq expressions are evaluated on both objects, so a
// field found in either is covered. managedFieldsManagers rules do not apply here: the
// fields' owners keep them through server-side apply. A nil live, an object not yet created,
// leaves desired as it is.
func (ig *Ignore) RespectLive(desired, live *unstructured.Unstructured) error {
	if desired == nil {
		return errors.New("respect live fields: desired object is nil")
	}
	rules := ig.matchingObject(desired)
	if len(rules) == 0 || live == nil {
		return nil
	}
	// A live object read without its TypeMeta has no kind; the name still identifies it.
	if dk, lk := desired.GroupVersionKind().GroupKind(), live.GroupVersionKind().GroupKind(); (lk.Kind != "" && dk != lk) ||
		desired.GetNamespace() != live.GetNamespace() || desired.GetName() != live.GetName() {
		return fmt.Errorf("respect live fields: desired %s %s/%s and live %s %s/%s are different objects",
			dk, desired.GetNamespace(), desired.GetName(), lk, live.GetNamespace(), live.GetName())
	}
	if desired.Object == nil {
		desired.Object = map[string]any{}
	}
	var paths [][]any
	for _, r := range rules {
		paths = append(paths, r.pointers...)
		for _, q := range r.jq {
			paths = append(paths, q.Paths(live.Object, desired.Object)...)
		}
	}
	jsontree.CopyAll(desired.Object, live.Object, paths)
	return nil
}
