package templates_test

import (
	"errors"
	"fmt"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/templates"
)

// Compile a template once, then render one Application per parameter set.
func ExampleCompile() {
	tmpl := navarchv1.ApplicationSetTemplate{
		Metadata: navarchv1.ApplicationSetTemplateMeta{
			Name:   "{{ .path.basename }}-{{ .name }}",
			Labels: map[string]string{"env": "{{ .metadata.labels.env }}"},
		},
		Spec: navarchv1.ApplicationSpec{
			Source: navarchv1.ApplicationSource{
				RepoURL: "https://git.example.com/apps.git",
				Path:    "{{ .path.path }}",
			},
			Destination: navarchv1.ApplicationDestination{Name: "{{ .name }}", Namespace: "{{ .path.basename }}"},
		},
	}
	// templatePatch produces what string substitution cannot: here a boolean.
	patch := `spec:
  syncPolicy:
    automated:
      prune: {{ eq .metadata.labels.env "dev" }}`

	t, err := templates.Compile(tmpl, &patch, templates.Options{
		GoTemplate:        true,
		GoTemplateOptions: []string{"missingkey=error"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	sets := []map[string]any{
		{"name": "dev-eu", "metadata": map[string]any{"labels": map[string]any{"env": "dev"}},
			"path": map[string]any{"path": "apps/guestbook", "basename": "guestbook"}},
		{"name": "prod-us", "metadata": map[string]any{"labels": map[string]any{"env": "prod"}},
			"path": map[string]any{"path": "apps/guestbook", "basename": "guestbook"}},
		{"name": "prod-eu", "metadata": map[string]any{"labels": map[string]any{}}},
	}
	for i, params := range sets {
		app, err := t.Render(params)
		if err != nil {
			fmt.Println(templates.WithParamSet(err, i, 0))
			continue
		}
		fmt.Println(app.Name, app.Labels["env"], app.Spec.Source.Path, app.Spec.Destination.Namespace, app.Spec.SyncPolicy.Automated.Prune)
	}
	// Output:
	// guestbook-dev-eu dev apps/guestbook guestbook true
	// guestbook-prod-us prod apps/guestbook guestbook false
	// spec.template.metadata.name: map has no entry for key "path" (parameter set 2 of generator 0)
}

// Fasttemplate mode substitutes flat, dotted keys and leaves unknown keys as written.
func ExampleRenderString() {
	s, err := templates.RenderString("{{path.basename}}-{{ name }}-{{ unknown }}",
		map[string]any{"path.basename": "guestbook", "name": "in-cluster"}, templates.Options{})
	fmt.Println(s, err)
	// Output: guestbook-in-cluster-{{ unknown }} <nil>
}

// Give every pass over an ApplicationSet a Budget; a template that crosses a limit fails with
// an error naming the field and the limit.
func ExampleNewBudget() {
	tmpl := navarchv1.ApplicationSetTemplate{
		Metadata: navarchv1.ApplicationSetTemplateMeta{Name: `mem-{{ len (repeat 600000000 "x") }}`},
	}
	t, err := templates.Compile(tmpl, nil, templates.Options{
		GoTemplate: true,
		Budget:     templates.NewBudget(5*time.Second, 256<<20),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = t.Render(map[string]any{"name": "a"})
	var limit *templates.LimitError
	if errors.As(err, &limit) {
		fmt.Println(limit.Limit, limit.Max)
	}
	fmt.Println(err)
	// Output:
	// ValueSize 1048576
	// spec.template.metadata.name: error calling repeat: the result would take 600000000 bytes, over the limit of 1048576 bytes per value
}
