package engine

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/diff"
)

// validate checks the pending objects of a plan: every kind must be served by the cluster or
// defined by a CRD of the same sync, every namespace must exist or be created by the sync, no
// object shared with another Application may carry FailOnSharedResource=true, and the server
// must have accepted every object in the comparison's dry run. It returns what is wrong.
func (e *Engine) validate(app *navarchv1.Application, plan, pending []*resource) []string {
	var objs []*unstructured.Unstructured
	createsNamespace := map[string]bool{}
	if e.syncOptions(app).on("CreateNamespace") {
		createsNamespace[app.Spec.Destination.Namespace] = true
	}
	for _, r := range plan {
		objs = append(objs, r.obj)
		if r.ref.Kind == "Namespace" && r.ref.Group == "" {
			createsNamespace[r.ref.Name] = true
		}
	}
	defined := crdScopes(objs)
	var problems []string
	for _, r := range pending {
		switch {
		case r.sharedWith != "" && r.options.on("FailOnSharedResource"):
			problems = append(problems, fmt.Sprintf("%s %s is already managed by Application %s (FailOnSharedResource=true)",
				r.ref.Kind, r.ref.Name, r.sharedWith))
		case r.mapping == nil && defined[r.gvk.GroupKind()] == "" && !r.options.on("SkipDryRunOnMissingResource"):
			problems = append(problems, fmt.Sprintf("%s %s: the cluster has no kind %s in %s, and no CustomResourceDefinition of this Application defines it",
				r.ref.Kind, r.ref.Name, r.gvk.Kind, r.gvk.GroupVersion().String()))
		case r.missingNamespace && !createsNamespace[r.ref.Namespace]:
			problems = append(problems, fmt.Sprintf("%s %s: namespace %q does not exist; add it to the source or set the sync option CreateNamespace=true",
				r.ref.Kind, r.ref.Name, r.ref.Namespace))
		case r.dryRunErr != nil:
			problems = append(problems, fmt.Sprintf("%s %s: %v", r.ref.Kind, r.ref.Name, r.dryRunErr))
		}
	}
	return problems
}

// validateHooks dry-runs the hook instances this attempt has not created yet. Instances of
// kinds a CRD of the plan defines, or in namespaces the sync creates, are checked when they
// are created. Successes are cached like comparisons, so waiting steps cost no dry runs. It
// returns what is wrong.
func (e *Engine) validateHooks(ctx context.Context, app *navarchv1.Application, remote *cluster, p *plan, apply []*resource) []string {
	var problems []string
	for _, t := range p.all {
		if !t.isHook() || e.result(app.Status.OperationState, t) != nil {
			continue
		}
		r := t.res
		if r.mapping == nil {
			if m, _ := remote.Mapping(r.gvk); m != nil {
				r.mapping = m
			} else {
				if !definesKind(apply, r.gvk.GroupKind()) {
					problems = append(problems, fmt.Sprintf("%s hook %s %s: the cluster has no kind %s in %s", t.phase, r.ref.Kind, r.ref.Name, r.gvk.Kind, r.gvk.GroupVersion().String()))
				}
				continue
			}
		}
		key, hash := remote.Name+"/hook/"+r.key(), diff.Hash(r.obj)
		if _, ok := e.dryRuns.get(key, hash, "", ""); ok {
			continue
		}
		if live, err := remote.Live(ctx, r.mapping, r.ref.Namespace, r.ref.Name); err != nil || live != nil {
			continue // an earlier instance exists and will be replaced: checked on creation
		}
		_, err := e.dryRun(ctx, remote, r)
		switch {
		case err == nil:
			e.dryRuns.put(key, hash, "", "", diff.Result{Equal: true})
		case isMissingNamespace(err) || transient(err):
		default:
			problems = append(problems, fmt.Sprintf("%s hook %s %s: %v", t.phase, r.ref.Kind, r.ref.Name, err))
		}
	}
	return problems
}

// revalidate dry-runs an object again, e.g. once its namespace exists, and records the outcome
// for validate. It returns only transient errors.
func (e *Engine) revalidate(ctx context.Context, remote *cluster, r *resource, ignoreHash string) error {
	predicted, err := e.dryRun(ctx, remote, r)
	r.missingNamespace, r.dryRunErr = false, nil
	switch {
	case transient(err):
		return err
	case isMissingNamespace(err):
		r.missingNamespace = true
	case err != nil:
		r.dryRunErr = err
	case predicted.GetResourceVersion() == "":
		e.dryRuns.put(remote.Name+"/"+r.key(), diff.Hash(r.obj), absent, ignoreHash, diff.Result{})
	}
	return nil
}

func definesKind(rs []*resource, gk schema.GroupKind) bool {
	var objs []*unstructured.Unstructured
	for _, r := range rs {
		objs = append(objs, r.obj)
	}
	return crdScopes(objs)[gk] != ""
}
