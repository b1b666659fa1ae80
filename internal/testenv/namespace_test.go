package testenv

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNameIsADistinctDNSLabel(t *testing.T) {
	names := map[string]string{} // name → test
	for _, sub := range []string{
		"create-only",
		"every parameter set renders the same name",
		"every parameter set renders the same name, twice",
		"names longer than 253 characters",
	} {
		t.Run(sub, func(t *testing.T) {
			name := Name(t)
			if errs := validation.IsDNS1123Label(name); len(errs) > 0 || len(name) > maxNameLength {
				t.Errorf("Name(%s) = %q: not a DNS label of at most %d characters: %v", t.Name(), name, maxNameLength, errs)
			}
			if other, ok := names[name]; ok {
				t.Errorf("Name(%s) = %q, the name of %s too", t.Name(), name, other)
			}
			names[name] = t.Name()
			if sub == "create-only" && name != "nameisadistinctdnslabel-create-only" {
				t.Errorf("Name(%s) = %q; want the test's name, lower case, without Test", t.Name(), name)
			}
			if !strings.HasPrefix(name, "nameisadistinctdnslabel-") {
				t.Errorf("Name(%s) = %q does not start with the test's name", t.Name(), name)
			}
		})
	}
}
