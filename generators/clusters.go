package generators

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/destination"
)

// lastAppliedAnnotation is kubectl's copy of the whole object; it is not a parameter anyone
// wants, and it would make every parameter set as large as the Cluster object.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Clusters is the clusters generator: one parameter set per registered Cluster whose labels
// match `selector`, in name order. It emits "name", "nameNormalized", "server", "project",
// "metadata.labels.<k>", "metadata.annotations.<k>" and "values.<k>" (goTemplate: .name,
// .nameNormalized, .server, .project, .metadata.labels, .metadata.annotations, .values).
//
// "project" is always the empty string: Argo CD emits the `project` of the cluster Secret,
// empty when it has none, and a Cluster belongs to no project. Emitting it keeps `{{project}}`
// rendering (to "") instead of failing under missingkey=error.
//
// As every Argo CD cluster Secret, every Cluster carries the label
// `argocd.argoproj.io/secret-type: cluster` as far as `selector` is concerned, so a selector
// written for Argo CD on that label matches every Cluster (see selector.matchesCluster).
//
// Only Cluster objects are listed: unlike Argo CD, the management cluster ("in-cluster") is
// not added implicitly; register it as a Cluster with spec.inCluster to select it.
type Clusters struct {
	// Spec is the generator's spec.
	Spec *navarchv1.ClusterGenerator
	// Field is the spec's path, e.g. "spec.generators[0].clusters".
	Field string
}

func (g Clusters) validate() error {
	_, err := compileSelector(g.Field+".selector", &g.Spec.Selector)
	return err
}

// RequeueAfter implements Generator: Cluster changes arrive through the controller's watch.
func (g Clusters) RequeueAfter() time.Duration { return 0 }

// Params implements Generator.
func (g Clusters) Params(ctx context.Context, in Inputs) ([]map[string]any, error) {
	sel, err := compileSelector(g.Field+".selector", &g.Spec.Selector)
	if err != nil {
		return nil, err
	}
	if in.Clusters == nil {
		return nil, fmt.Errorf("%s: %w", g.Field, ErrNoClusterLister)
	}
	clusters, err := in.Clusters.ListClusters(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: list clusters: %w", g.Field, err)
	}
	// The lister may hand out its cache's slice: sort a copy.
	clusters = slices.Clone(clusters)
	slices.SortFunc(clusters, func(a, b navarchv1.Cluster) int { return strings.Compare(a.Name, b.Name) })

	var out []map[string]any
	for i := range clusters {
		c := &clusters[i]
		if !sel.matchesCluster(c.Labels) {
			continue
		}
		params := clusterParams(c, in.GoTemplate)
		if err := appendValues(in, g.Field, fmt.Sprintf("cluster %q", c.Name), g.Spec.Values, params); err != nil {
			return nil, err
		}
		out = append(out, params)
	}
	return out, nil
}

// clusterParams is the parameter set of one Cluster, before values.
func clusterParams(c *navarchv1.Cluster, goTemplate bool) map[string]any {
	server := c.Spec.Server
	if server == "" && c.Spec.InCluster {
		server = destination.InClusterServer
	}
	params := map[string]any{
		"name":           c.Name,
		"nameNormalized": normalizeName(c.Name),
		"server":         server,
		"project":        "",
	}
	if goTemplate {
		labels := make(map[string]any, len(c.Labels))
		for k, v := range c.Labels {
			labels[k] = v
		}
		annotations := make(map[string]any, len(c.Annotations))
		for k, v := range c.Annotations {
			if k != lastAppliedAnnotation {
				annotations[k] = v
			}
		}
		params["metadata"] = map[string]any{"labels": labels, "annotations": annotations}
		return params
	}
	for k, v := range c.Annotations {
		if k != lastAppliedAnnotation {
			params["metadata.annotations."+k] = v
		}
	}
	for k, v := range c.Labels {
		params["metadata.labels."+k] = v
	}
	return params
}

// ErrNoClusterLister is returned by a clusters generator run without Inputs.Clusters.
var ErrNoClusterLister = errors.New("no cluster lister configured")
