package main

import (
	"bytes"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// `-o json` is a JSON list in every case, so `navarch generate -o json | jq length` says 0
// rather than failing on `null` when nothing is generated.
func TestPrintApplicationsJSONIsAlwaysAList(t *testing.T) {
	app := &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "api"}}
	for _, tt := range []struct {
		name string
		apps []*navarchv1.Application
		want int
	}{
		{name: "nothing generated", apps: nil, want: 0},
		{name: "one Application", apps: []*navarchv1.Application{app}, want: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printApplications(&out, tt.apps, "json"); err != nil {
				t.Fatal(err)
			}
			var got []map[string]any
			if err := json.Unmarshal(out.Bytes(), &got); err != nil || got == nil {
				t.Fatalf("-o json printed %q, want a JSON list (err %v)", out.String(), err)
			}
			if len(got) != tt.want {
				t.Errorf("-o json printed %d Applications, want %d:\n%s", len(got), tt.want, out.String())
			}
		})
	}
}
