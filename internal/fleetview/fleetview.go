// Package fleetview holds the rules by which navarch shows its fleet as a matrix of
// applications × clusters, so that `navarch status` and the web dashboard draw the same one:
// which row an Application belongs to, which cluster column it lands in, and in what order
// the columns come. Callers build their own rows and cells from these.
package fleetview

import (
	"cmp"
	"slices"
	"strings"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/destination"
)

// Row names the row of app within its namespace, and the ApplicationSet that generated it
// ("" when none). The Applications an ApplicationSet generates for one application share a
// row whatever their cluster, "<set>:<application>": the application is the template's
// app.kubernetes.io/name label when it sets one (the source path may differ per cluster, e.g.
// an overlay per environment), else the source path. Any other Application is a row of its
// own, named after it.
func Row(app *navarchv1.Application) (name, applicationSet string) {
	set := app.Labels[navarchv1.LabelApplicationSet]
	if set == "" {
		return app.Name, ""
	}
	return set + ":" + cmp.Or(app.Labels["app.kubernetes.io/name"], SourcePath(app)), set
}

// SourcePath names an Application's (first) source: its path, or its chart.
func SourcePath(app *navarchv1.Application) string {
	srcs := app.Spec.GetSources()
	if len(srcs) == 0 {
		return ""
	}
	return cmp.Or(srcs[0].Path, srcs[0].Chart)
}

// Column names the cluster column of a destination: the cluster it resolves to as the
// controller resolves it (in-cluster or a registered Cluster), else the destination as
// written, name or server, in a column of its own.
func Column(d navarchv1.ApplicationDestination, clusters []navarchv1.Cluster) string {
	if name, err := destination.Resolve(d, clusters); err == nil {
		return name
	}
	return cmp.Or(d.Name, d.Server)
}

// SortColumns orders columns as the matrix shows them: registered Clusters by name, then
// in-cluster, then the destinations no Cluster matches by name. key tells a column's name and
// whether a Cluster of that name is registered.
func SortColumns[C any](columns []C, key func(C) (name string, registered bool)) {
	order := func(c C) (int, string) {
		name, registered := key(c)
		switch {
		case registered:
			return 0, name
		case name == navarchv1.InClusterName:
			return 1, name
		}
		return 2, name
	}
	slices.SortFunc(columns, func(a, b C) int {
		oa, na := order(a)
		ob, nb := order(b)
		return cmp.Or(cmp.Compare(oa, ob), strings.Compare(na, nb))
	})
}
