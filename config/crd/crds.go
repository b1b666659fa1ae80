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
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
// one is Established, so objects of those kinds can be created as soon as it returns.
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
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, want := range crds {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
				return false, nil //nolint:nilerr // not yet visible: poll again
			}
			if !established(got) {
				return false, nil
			}
		}
		return true, nil
	})
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
