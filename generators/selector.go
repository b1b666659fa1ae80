package generators

import (
	"context"
	"fmt"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selector is a compiled metav1.LabelSelector. Unlike labels.Selector it puts no syntax limits
// on keys or values, because it also filters parameter sets, whose keys ("path[0]",
// "metadata.labels.env") and values (server URLs) are not label syntax; Argo CD lifts the same
// limits for generator selectors.
type selector struct {
	reqs []requirement
}

type requirement struct {
	key    string
	op     metav1.LabelSelectorOperator
	values []string
}

// compileSelector validates s; field is its path for errors. A selector with no requirements
// matches everything.
func compileSelector(field string, s *metav1.LabelSelector) (*selector, error) {
	if s == nil {
		return &selector{}, nil
	}
	out := &selector{}
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("%s.matchLabels: keys must not be empty", field)
		}
		out.reqs = append(out.reqs, requirement{key: k, op: metav1.LabelSelectorOpIn, values: []string{s.MatchLabels[k]}})
	}
	for i, e := range s.MatchExpressions {
		f := fmt.Sprintf("%s.matchExpressions[%d]", field, i)
		if e.Key == "" {
			return nil, fmt.Errorf("%s.key: must not be empty", f)
		}
		switch e.Operator {
		case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
			if len(e.Values) == 0 {
				return nil, fmt.Errorf("%s.values: must not be empty for operator %s", f, e.Operator)
			}
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
			if len(e.Values) != 0 {
				return nil, fmt.Errorf("%s.values: must be empty for operator %s", f, e.Operator)
			}
		default:
			return nil, fmt.Errorf("%s.operator: %q is not one of In, NotIn, Exists, DoesNotExist", f, e.Operator)
		}
		out.reqs = append(out.reqs, requirement{key: e.Key, op: e.Operator, values: e.Values})
	}
	return out, nil
}

// matches reports whether the labels (or parameters) that get returns satisfy every
// requirement, with Kubernetes semantics: NotIn and DoesNotExist match a missing key.
func (s *selector) matches(get func(key string) (string, bool)) bool {
	for _, r := range s.reqs {
		v, ok := get(r.key)
		switch r.op {
		case metav1.LabelSelectorOpIn:
			if !ok || !slices.Contains(r.values, v) {
				return false
			}
		case metav1.LabelSelectorOpNotIn:
			if ok && slices.Contains(r.values, v) {
				return false
			}
		case metav1.LabelSelectorOpExists:
			if !ok {
				return false
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if ok {
				return false
			}
		}
	}
	return true
}

// Argo CD lists clusters as Secrets labelled argocd.argoproj.io/secret-type=cluster, and its
// clusters generator matches its selector against those labels; ApplicationSets written for it
// select "every cluster" with that label. A Cluster is a registered cluster by being one.
const (
	argoSecretTypeLabel   = "argocd.argoproj.io/secret-type"
	argoSecretTypeCluster = "cluster"
)

// matchesCluster reports whether a Cluster with these labels satisfies the selector. Every
// Cluster also carries argoSecretTypeLabel=cluster, as every Argo CD cluster Secret does.
func (s *selector) matchesCluster(labels map[string]string) bool {
	return s.matches(func(k string) (string, bool) {
		if k == argoSecretTypeLabel {
			return argoSecretTypeCluster, true
		}
		v, ok := labels[k]
		return v, ok
	})
}

// selected applies a generator's `selector` to the parameter sets it produced. Keys are the
// flat fasttemplate names in both modes: in goTemplate mode "metadata.labels.env" is looked up
// as .metadata.labels.env and "path.segments.0" as the first segment.
type selected struct {
	Generator
	selector *selector
	field    string
}

// Params implements Generator.
func (s selected) Params(ctx context.Context, in Inputs) ([]map[string]any, error) {
	sets, err := s.Generator.Params(ctx, in)
	if err != nil {
		return nil, err
	}
	if len(s.selector.reqs) == 0 {
		return sets, nil
	}
	kept := sets[:0:0]
	for _, set := range sets {
		flat := flattenParams(set)
		if s.selector.matches(func(k string) (string, bool) {
			v, ok := flat[k]
			return v, ok
		}) {
			kept = append(kept, set)
		}
	}
	return kept, nil
}
