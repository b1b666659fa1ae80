package templates

import (
	"errors"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestMerge(t *testing.T) {
	base := navarchv1.ApplicationSetTemplate{
		Metadata: navarchv1.ApplicationSetTemplateMeta{
			Name:        "{{name}}",
			Labels:      map[string]string{"team": "platform", "env": "{{env}}"},
			Annotations: map[string]string{"a": "1"},
			Finalizers:  []string{"navarch.io/resources"},
		},
		Spec: navarchv1.ApplicationSpec{
			Source:      navarchv1.ApplicationSource{RepoURL: "https://git.example.com/a.git", Path: "{{path}}", TargetRevision: "main"},
			Destination: navarchv1.ApplicationDestination{Name: "{{name}}", Namespace: "default"},
			SyncPolicy: &navarchv1.SyncPolicy{
				Automated:   &navarchv1.SyncPolicyAutomated{Prune: true},
				SyncOptions: []navarchv1.SyncOption{"CreateNamespace=true"},
			},
			RevisionHistoryLimit: ptr(int64(10)),
		},
	}
	tests := []struct {
		name     string
		override *navarchv1.GeneratorTemplate
		want     func(*navarchv1.ApplicationSetTemplate)
	}{
		{
			name:     "nil override",
			override: nil,
			want:     func(*navarchv1.ApplicationSetTemplate) {},
		},
		{
			name: "metadata: set fields win, maps merge",
			override: &navarchv1.GeneratorTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{
				Name:   "{{name}}-canary",
				Labels: map[string]string{"env": "canary", "extra": "x"},
			}},
			want: func(w *navarchv1.ApplicationSetTemplate) {
				w.Metadata.Name = "{{name}}-canary"
				w.Metadata.Labels = map[string]string{"team": "platform", "env": "canary", "extra": "x"}
			},
		},
		{
			name: "metadata: lists are taken whole",
			override: &navarchv1.GeneratorTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{
				Finalizers: []string{"other"},
			}},
			want: func(w *navarchv1.ApplicationSetTemplate) { w.Metadata.Finalizers = []string{"other"} },
		},
		{
			name: "partial spec merged field by field",
			override: &navarchv1.GeneratorTemplate{Spec: &apiextensionsv1.JSON{Raw: []byte(`{
				"project": "default",
				"source": {"path": "overlays/{{path}}", "kustomize": {"namePrefix": "c-"}},
				"destination": {"namespace": "canary"},
				"syncPolicy": {"syncOptions": ["ServerSideApply=true"], "automated": {"selfHeal": true}}
			}`)}},
			want: func(w *navarchv1.ApplicationSetTemplate) {
				w.Spec.Project = "default"
				w.Spec.Source.Path = "overlays/{{path}}"
				w.Spec.Source.Kustomize = &navarchv1.ApplicationSourceKustomize{NamePrefix: "c-"}
				w.Spec.Destination.Namespace = "canary"
				w.Spec.SyncPolicy.SyncOptions = []navarchv1.SyncOption{"ServerSideApply=true"}
				w.Spec.SyncPolicy.Automated.SelfHeal = true
			},
		},
		{
			name: "zero values do not clear the base (as in Argo CD)",
			override: &navarchv1.GeneratorTemplate{Spec: &apiextensionsv1.JSON{Raw: []byte(`{
				"syncPolicy": {"automated": {"prune": false}, "syncOptions": []},
				"revisionHistoryLimit": 0,
				"source": {"path": ""}
			}`)}},
			want: func(*navarchv1.ApplicationSetTemplate) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := *base.DeepCopy()
			got, err := Merge(base, tt.override)
			if err != nil {
				t.Fatal(err)
			}
			want := base.DeepCopy()
			tt.want(want)
			if !reflect.DeepEqual(&got, want) {
				t.Errorf("Merge =\n%+v\nwant\n%+v", got, *want)
			}
			if !reflect.DeepEqual(base, before) {
				t.Error("Merge modified base")
			}
			// The result shares nothing with base.
			if got.Spec.SyncPolicy != nil && got.Spec.SyncPolicy == base.Spec.SyncPolicy {
				t.Error("Merge result shares syncPolicy with base")
			}
		})
	}
	_, err := Merge(base, &navarchv1.GeneratorTemplate{Spec: &apiextensionsv1.JSON{Raw: []byte(`{"source": "x"}`)}})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "template.spec" {
		t.Errorf("Merge with an invalid spec: %v", err)
	}
}

// TestMergedTemplateRenders checks the intended use: Merge, then Compile and Render.
func TestMergedTemplateRenders(t *testing.T) {
	base := benchTemplate(false)
	merged, err := Merge(base, &navarchv1.GeneratorTemplate{
		Metadata: navarchv1.ApplicationSetTemplateMeta{Labels: map[string]string{"{{name}}": "yes"}},
		Spec:     &apiextensionsv1.JSON{Raw: []byte(`{"source": {"targetRevision": "release-{{values.revision}}"}}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	app, err := render(t, merged, Options{}, benchParams(1, false)[0])
	if err != nil {
		t.Fatal(err)
	}
	if app.Labels["cluster-000"] != "yes" || app.Labels["team"] != "platform" || app.Spec.Source.TargetRevision != "release-main" {
		t.Errorf("labels %v, source %+v", app.Labels, app.Spec.Source)
	}
}
