// Package scheme holds the runtime.Scheme every navarch client uses: the core Kubernetes types
// and navarch's own.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// New returns a scheme with the core Kubernetes types and navarch's.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // only a programming error: static type registrations
	}
	if err := navarchv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}
