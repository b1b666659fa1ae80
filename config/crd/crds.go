// Package crd embeds navarch's generated CustomResourceDefinitions (bases/, written by
// `make manifests`) and installs them into a cluster, so the navarch binary and the tests carry
// the exact schemas the API types declare.
package crd

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

//go:embed bases/*.yaml
var bases embed.FS

// Load returns the embedded CRDs.
func Load() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := fs.ReadDir(bases, "bases")
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		data, err := bases.ReadFile(path.Join("bases", e.Name()))
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := dec.Decode(crd); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("decode %s: %w", e.Name(), err)
			}
			if crd.Name != "" {
				crds = append(crds, crd)
			}
		}
	}
	return crds, nil
}

// Install creates or updates the embedded CRDs in the cluster behind cfg and waits until every
// one is Established and served by discovery, so objects of those kinds can be created as soon
// as it returns: a client whose REST mapper reads discovery right after Established can still
// find no kind (seen under load: `no matches for kind "Cluster" in version
// "navarch.io/v1alpha1"`).
func Install(ctx context.Context, cfg *rest.Config) error {
	crds, err := Load()
	if err != nil {
		return err
	}
	scheme := apiextensionsScheme()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client for CRD install: %w", err)
	}
	for _, want := range crds {
		got := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKeyFromObject(want), got)
		switch {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, want.DeepCopy()); err != nil {
				return fmt.Errorf("create CRD %s: %w", want.Name, err)
			}
		case err != nil:
			return fmt.Errorf("get CRD %s: %w", want.Name, err)
		default:
			got.Spec = want.Spec
			if err := c.Update(ctx, got); err != nil {
				return fmt.Errorf("update CRD %s: %w", want.Name, err)
			}
		}
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client for CRD install: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, want := range crds {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
				return false, nil //nolint:nilerr // not yet visible: poll again
			}
			if !established(got) || !served(disco, want) {
				return false, nil
			}
		}
		return true, nil
	})
}

// served reports whether discovery lists the resource of crd in each of its served versions.
func served(disco discovery.DiscoveryInterface, crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		list, err := disco.ServerResourcesForGroupVersion(crd.Spec.Group + "/" + v.Name)
		if err != nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == crd.Spec.Names.Plural }) {
			return false
		}
	}
	return true
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
