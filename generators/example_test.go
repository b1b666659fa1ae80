package generators_test

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/generators"
)

// A matrix of a list and a second list that uses the first one's parameters, in the default
// fasttemplate mode (flat string parameters).
func ExampleGenerate() {
	spec := &navarchv1.ApplicationSetSpec{
		Generators: []navarchv1.ApplicationSetGenerator{{
			Matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: &navarchv1.ListGenerator{Elements: []apiextensionsv1.JSON{
					{Raw: []byte(`{"env": "staging"}`)},
					{Raw: []byte(`{"env": "prod", "values": {"replicas": 3}}`)},
				}}},
				{List: &navarchv1.ListGenerator{ElementsYaml: "- app: api-{{env}}\n"}},
			}},
		}},
	}
	results, err := generators.Generate(context.Background(), spec, generators.Inputs{Renderer: substitute{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, params := range results[0].Params {
		fmt.Println(params)
	}
	fmt.Println("requeue after:", generators.MinRequeueAfter(results))
	// Output:
	// map[app:api-staging env:staging]
	// map[app:api-prod env:prod values.replicas:3]
	// requeue after: 0s
}

// substitute is a minimal fasttemplate Renderer; the controller uses templates.Engine.
type substitute struct{}

func (substitute) RenderString(s string, params map[string]any) (string, error) {
	for k, v := range params {
		s = strings.ReplaceAll(s, "{{"+k+"}}", fmt.Sprint(v))
	}
	return s, nil
}
