// Package argocd reads Argo CD YAML as users already have it and converts it to navarch
// objects: Applications and ApplicationSets (Application, ApplicationSet), AppProjects
// (Project), cluster Secrets (ClusterSecret), repository Secrets and credential templates
// (RepositorySecret), and the SSH known hosts ConfigMap (KnownHosts). Every field is accounted
// for: a field with no meaning in navarch that is safe to drop (e.g. an Application's `info`)
// is dropped with a Warning; a field that would change behaviour and that navarch does not
// support is an error naming it, never silently lost. Native navarch objects go through the same schema check, so a typo is caught
// before anything is generated. Warnings and errors name fields and never show a credential.
package argocd

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/config/crd"
)

// APIVersion is the apiVersion of Argo CD's Application, ApplicationSet and AppProject.
const APIVersion = "argoproj.io/v1alpha1"

// Warning is a field dropped or rewritten on conversion.
type Warning struct {
	// Field is the field's path, e.g. `spec.template.spec.project`.
	Field string
	// Message says what happened to it and why that is safe.
	Message string
}

func (w Warning) String() string { return w.Field + ": " + w.Message }

// FieldError is a field that cannot be carried over.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ConvertErrors collects every field that cannot be carried over, so a user fixes them in one go.
type ConvertErrors []*FieldError

func (e ConvertErrors) Error() string {
	lines := make([]string, len(e))
	for i, fe := range e {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// ApplicationSet converts an ApplicationSet, given as a decoded YAML/JSON object in either
// navarch's or Argo CD's apiVersion, into navarch's type.
func ApplicationSet(obj map[string]any) (*navarchv1.ApplicationSet, []Warning, error) {
	out := &navarchv1.ApplicationSet{}
	warnings, err := convert(obj, applicationSetKind, out)
	if err != nil {
		return nil, warnings, err
	}
	return out, warnings, nil
}

// Application converts an Application in either apiVersion into navarch's type.
func Application(obj map[string]any) (*navarchv1.Application, []Warning, error) {
	out := &navarchv1.Application{}
	warnings, err := convert(obj, applicationKind, out)
	if err != nil {
		return nil, warnings, err
	}
	return out, warnings, nil
}

// kindRules say how documents of one kind convert.
type kindRules struct {
	// kind is navarch's kind, argoKind Argo CD's.
	kind, argoKind string
	// crd names navarch's CustomResourceDefinition, whose schema every field is checked against.
	crd string
	// field decides what happens to one field of an Argo CD document.
	field func(field, key string, val any) rule
	// object applies the rules that look at several fields of one object, before the fields
	// themselves are walked, to Argo CD and navarch documents alike. It may edit obj.
	object func(c *converter, path string, obj map[string]any)
}

var (
	applicationKind = kindRules{kind: "Application", argoKind: "Application", crd: "applications.navarch.io",
		field: argoRule, object: (*converter).argoObjectRules}
	applicationSetKind = kindRules{kind: "ApplicationSet", argoKind: "ApplicationSet", crd: "applicationsets.navarch.io",
		field: argoRule, object: (*converter).argoObjectRules}
)

// convert checks and converts obj's spec (and operation, for Applications) into out.
func convert(obj map[string]any, kind kindRules, out any) ([]Warning, error) {
	c, err := newConverter(obj, kind)
	if err != nil {
		return nil, err
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return nil, &FieldError{Field: "spec", Message: "Required value"}
	}
	c.walk("spec", spec, c.schema.Properties["spec"])
	if op, ok := obj["operation"].(map[string]any); ok {
		c.walk("operation", op, c.schema.Properties["operation"])
	}
	return c.warnings, c.finish(obj, out)
}

type converter struct {
	kind     kindRules
	argo     bool
	schema   apiextensionsv1.JSONSchemaProps
	warnings []Warning
	errs     ConvertErrors
	// generatorSchema is the schema of one top-level generator: nested matrix and merge
	// generators are schemaless in the CRD and are checked against it instead.
	generatorSchema *apiextensionsv1.JSONSchemaProps
	// templateSpecSchema is the schema of spec.template.spec, for generators' template overrides.
	templateSpecSchema *apiextensionsv1.JSONSchemaProps
}

func newConverter(obj map[string]any, kind kindRules) (*converter, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	gotKind, _ := obj["kind"].(string)
	c := &converter{kind: kind}
	switch {
	case gotKind == kind.argoKind && apiVersion == APIVersion:
		c.argo = true
	case gotKind == kind.kind && apiVersion == navarchv1.GroupVersion.String():
	case gotKind != kind.kind && gotKind != kind.argoKind:
		if kind.kind == kind.argoKind {
			return nil, fmt.Errorf("kind: want %s, got %q", kind.kind, gotKind)
		}
		return nil, fmt.Errorf("kind: want %s or Argo CD's %s, got %q", kind.kind, kind.argoKind, gotKind)
	case kind.kind == kind.argoKind:
		return nil, fmt.Errorf("apiVersion: want %s or %s, got %q", navarchv1.GroupVersion, APIVersion, apiVersion)
	case gotKind == kind.argoKind:
		return nil, fmt.Errorf("apiVersion: want %s for an %s, got %q", APIVersion, kind.argoKind, apiVersion)
	default:
		return nil, fmt.Errorf("apiVersion: want %s for a %s, got %q", navarchv1.GroupVersion, kind.kind, apiVersion)
	}
	schema, err := schemaOf(kind.crd)
	if err != nil {
		return nil, err
	}
	c.schema = schema
	if gens, ok := schema.Properties["spec"].Properties["generators"]; ok && gens.Items != nil {
		c.generatorSchema = gens.Items.Schema
	}
	if tmpl, ok := schema.Properties["spec"].Properties["template"]; ok {
		if spec, ok := tmpl.Properties["spec"]; ok {
			c.templateSpecSchema = &spec
		}
	}
	return c, nil
}

// finish converts metadata and decodes the checked object into out.
func (c *converter) finish(obj map[string]any, out any) error {
	converted := map[string]any{
		"apiVersion": navarchv1.GroupVersion.String(),
		"kind":       c.kind.kind,
		"metadata":   c.metadata(obj["metadata"]),
		"spec":       obj["spec"],
	}
	if op, ok := obj["operation"]; ok {
		converted["operation"] = op
	}
	if len(c.errs) > 0 {
		sort.Slice(c.errs, func(i, j int) bool { return c.errs[i].Field < c.errs[j].Field })
		return c.errs
	}
	// Default as the apiserver would on create, so what is compared or printed is what would
	// be stored (e.g. revisionHistoryLimit: 10).
	if err := c.applyDefaults(converted); err != nil {
		return err
	}
	data, err := json.Marshal(converted)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

func (c *converter) applyDefaults(obj map[string]any) error {
	// Work on JSON-decoded values, as the apiserver does.
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var generic map[string]any
	if err := json.Unmarshal(data, &generic); err != nil {
		return err
	}
	if err := setDefaults(generic, &c.schema); err != nil {
		return err
	}
	for k := range obj {
		delete(obj, k)
	}
	for k, v := range generic {
		obj[k] = v
	}
	return nil
}

// setDefaults fills in the schema's default values for missing fields of v, recursively, as
// the apiserver's structural defaulting does for the fields navarch's CRDs default.
func setDefaults(v any, schema *apiextensionsv1.JSONSchemaProps) error {
	switch val := v.(type) {
	case map[string]any:
		for name, prop := range schema.Properties {
			child, ok := val[name]
			if !ok && prop.Default != nil {
				var d any
				if err := json.Unmarshal(prop.Default.Raw, &d); err != nil {
					return fmt.Errorf("default of %s: %w", name, err)
				}
				val[name] = d
				continue
			}
			if ok {
				if err := setDefaults(child, &prop); err != nil {
					return err
				}
			}
		}
	case []any:
		if schema.Items != nil && schema.Items.Schema != nil {
			for _, item := range val {
				if err := setDefaults(item, schema.Items.Schema); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// metadata keeps what a user writes (name, namespace, labels, annotations) and drops what a
// server wrote (uid, resourceVersion, managedFields, …).
func (c *converter) metadata(v any) map[string]any {
	in, _ := v.(map[string]any)
	out := map[string]any{}
	for _, k := range []string{"name", "namespace", "labels", "annotations", "generateName"} {
		if val, ok := in[k]; ok {
			out[k] = val
		}
	}
	if fins, ok := in["finalizers"].([]any); ok && len(fins) > 0 {
		c.warn("metadata.finalizers", "dropped: navarch adds the finalizers it needs itself")
	}
	return out
}

func (c *converter) warn(field, msg string) {
	c.warnings = append(c.warnings, Warning{Field: field, Message: msg})
}

func (c *converter) fail(field, msg string) {
	c.errs = append(c.errs, &FieldError{Field: field, Message: msg})
}

// walk checks obj against schema, applying the Argo CD rules on the way. It edits obj in place
// (dropping ignorable fields, rewriting finalizers).
func (c *converter) walk(path string, obj map[string]any, schema apiextensionsv1.JSONSchemaProps) {
	if c.kind.object != nil {
		c.kind.object(c, path, obj)
	}
	for _, key := range sortedKeys(obj) {
		field := path + "." + key
		val := obj[key]
		if c.argo {
			switch rule := c.kind.field(field, key, val); rule.action {
			case drop:
				delete(obj, key)
				c.warn(field, rule.message)
				continue
			case unsupported:
				c.fail(field, rule.message)
				continue
			case rewrite:
				if converted, changed := rule.rewrite(val); changed {
					obj[key], val = converted, converted
					c.warn(field, rule.message)
				}
			}
		}
		prop, known := schema.Properties[key]
		if !known {
			if schema.XPreserveUnknownFields != nil && *schema.XPreserveUnknownFields {
				continue
			}
			if schema.AdditionalProperties != nil {
				continue // a map such as labels: any key is fine
			}
			c.fail(field, "unknown field; navarch has no such field")
			continue
		}
		c.walkValue(field, key, val, prop)
	}
}

func (c *converter) walkValue(field, key string, val any, prop apiextensionsv1.JSONSchemaProps) {
	schemaless := prop.XPreserveUnknownFields != nil && *prop.XPreserveUnknownFields
	switch v := val.(type) {
	case map[string]any:
		switch {
		case schemaless && (key == "matrix" || key == "merge") && c.generatorSchema != nil:
			// A nested matrix or merge: check it as the top-level generator kind it is.
			c.walk(field, v, c.generatorSchema.Properties[key])
		case schemaless && key == "spec" && strings.HasSuffix(field, ".template.spec") && c.templateSpecSchema != nil:
			// A generator's partial template override: check it against the template's spec.
			c.walk(field, v, *c.templateSpecSchema)
		case !schemaless:
			c.walk(field, v, prop)
		}
	case []any:
		if prop.Items == nil || prop.Items.Schema == nil {
			return
		}
		for i, item := range v {
			if m, ok := item.(map[string]any); ok {
				itemSchema := *prop.Items.Schema
				if itemSchema.XPreserveUnknownFields != nil && *itemSchema.XPreserveUnknownFields {
					continue // list elements and the like: free-form by design
				}
				c.walk(fmt.Sprintf("%s[%d]", field, i), m, itemSchema)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// schemas are the embedded CRDs' schemas by CRD name, parsed once per process: every
// converted document needs one, and the CRDs are ~200 KB of YAML.
var schemas = sync.OnceValues(func() (map[string]apiextensionsv1.JSONSchemaProps, error) {
	crds, err := crd.Load()
	if err != nil {
		return nil, err
	}
	out := map[string]apiextensionsv1.JSONSchemaProps{}
	for _, d := range crds {
		for _, v := range d.Spec.Versions {
			if v.Name == navarchv1.GroupVersion.Version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				out[d.Name] = *v.Schema.OpenAPIV3Schema
			}
		}
	}
	return out, nil
})

func schemaOf(crdName string) (apiextensionsv1.JSONSchemaProps, error) {
	all, err := schemas()
	if err != nil {
		return apiextensionsv1.JSONSchemaProps{}, err
	}
	s, ok := all[crdName]
	if !ok {
		return apiextensionsv1.JSONSchemaProps{}, fmt.Errorf("no %s schema for %s embedded", crdName, navarchv1.GroupVersion)
	}
	// A deep copy: the converter keeps pointers into it.
	return *s.DeepCopy(), nil
}
