package helm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// ErrValuesSchema is returned, wrapped, when the values of a chart or subchart do not meet its
// values.schema.json.
var ErrValuesSchema = errors.New("values do not meet the values.schema.json")

// schemaURL is where a chart's schema sits for the JSON schema compiler, as in Helm.
const schemaURL = "file:///values.schema.json"

// validateValues checks the values of ch, and of each subchart that has values, against their
// values.schema.json, as Helm does. Unlike Helm, it never reads what a schema refers to
// outside itself (other files, URLs): a render must not read the controller's files or reach
// the network for a chart. Such references accept any value; a schema whose references cannot
// be resolved that way is not enforced.
func validateValues(ch *chartv2.Chart, values map[string]any) error {
	var problems []string
	validateChart(ch, values, ch.Name(), &problems)
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrValuesSchema, strings.Join(problems, "; "))
	}
	return nil
}

// validateChart appends the problems of the values of ch, at path in the chart tree, to
// problems.
func validateChart(ch *chartv2.Chart, values map[string]any, path string, problems *[]string) {
	if len(ch.Schema) > 0 {
		if err := validateSchema(ch.Schema, values); err != nil {
			*problems = append(*problems, path+": "+err.Error())
		}
	}
	for _, sub := range ch.Dependencies() {
		raw := values[sub.Name()]
		if raw == nil {
			continue
		}
		subPath := path + "/charts/" + sub.Name()
		m, ok := raw.(map[string]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s: values are not an object but %T", subPath, raw))
			continue
		}
		validateChart(sub, m, subPath, problems)
	}
}

// validateSchema checks values against one values.schema.json.
func validateSchema(schemaJSON []byte, values map[string]any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot validate against values.schema.json: %v", r)
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	loader := &offlineLoader{}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(loader)
	if err := compiler.AddResource(schemaURL, doc); err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	schema, err := compiler.Compile(schemaURL)
	switch {
	case err != nil && loader.asked:
		// The schema needs part of a document it refers to, which is not read.
		return nil
	case err != nil:
		return fmt.Errorf("values.schema.json: %w", err)
	}
	if err := schema.Validate(values); err != nil {
		if verr, ok := errors.AsType[*jsonschema.ValidationError](err); ok {
			return errors.New(validationMessage(verr))
		}
		return err
	}
	return nil
}

// validationMessage flattens the indented list of a validation error onto one line, without
// its first line, which names the schema.
func validationMessage(err *jsonschema.ValidationError) string {
	lines := strings.Split(err.Error(), "\n")
	if len(lines) > 1 && strings.HasPrefix(lines[0], "jsonschema validation failed") {
		lines = lines[1:]
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(strings.TrimSpace(l), "- ")
	}
	return strings.Join(lines, "; ")
}

// offlineLoader stands in for every document a schema refers to, files and URLs alike, with
// the schema that accepts everything, and remembers that it was asked.
type offlineLoader struct{ asked bool }

func (l *offlineLoader) Load(string) (any, error) {
	l.asked = true
	return true, nil
}
