package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// openAPILock guards kyaml's OpenAPI schema, which is global to the process. Ordinary
// kustomize runs only read it and share the lock. A kustomization that sets openapi replaces
// the schema for the whole process, so its run holds the lock alone and resets the schema
// before letting others in.
var openAPILock sync.RWMutex

// renderKustomization builds the kustomization in dir, with the options of opts on top.
func renderKustomization(repo fs.FS, dir string, opts *navarchv1.ApplicationSourceKustomize) ([]*unstructured.Unstructured, error) {
	var overlay []byte
	if !isZeroKustomize(opts) {
		var err error
		if overlay, err = overlayKustomization(dir, opts); err != nil {
			return nil, err
		}
	}
	// Most kustomizations leave the schema alone and run side by side. The first run stops as
	// soon as it meets an openapi field; it is then run again alone.
	objs, err := runKustomize(repo, dir, overlay, false)
	if errors.Is(err, errNeedsExclusive) {
		objs, err = runKustomize(repo, dir, overlay, true)
	}
	return objs, err
}

// runKustomize runs kustomize on dir, or on the overlay if there is one. exclusive says
// whether the run holds openAPILock alone.
func runKustomize(repo fs.FS, dir string, overlay []byte, exclusive bool) ([]*unstructured.Unstructured, error) {
	if exclusive {
		openAPILock.Lock()
		defer func() {
			openapi.ResetOpenAPI()
			openAPILock.Unlock()
		}()
	} else {
		openAPILock.RLock()
		defer openAPILock.RUnlock()
	}

	fsys := newSnapshotFS(repo)
	// refused is the first file that the checks refused. kustomize gets an error for it, but
	// may swallow it (it tries each kustomization file name in turn), so the check's own error
	// is what Render returns.
	var refused error
	fsys.inspect = func(name string, data []byte) error {
		var (
			doc int
			err error
		)
		if isKustomizationName(path.Base(name)) {
			err = checkKustomization(data, exclusive)
		} else {
			doc, err = checkPluginConfigsInFile(data)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, errNeedsExclusive) {
			err = &Error{File: name, Document: doc, Err: err}
		}
		if refused == nil {
			refused = err
		}
		return err
	}

	target := repoRoot
	if dir != "." {
		target += "/" + dir
	}
	if overlay != nil {
		fsys.files[overlayRoot+"/kustomization.yaml"] = overlay
		target = overlayRoot
	}
	m, err := runKrusty(fsys, target)
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, &Error{File: dir, Err: &kustomizeError{err: err}}
	}

	resources := m.Resources()
	objs := make([]*unstructured.Unstructured, 0, len(resources))
	for _, r := range resources {
		j, err := r.MarshalJSON()
		if err != nil {
			return nil, &Error{File: dir, Err: &kustomizeError{err: err}}
		}
		v, err := decodeJSON(j)
		if err != nil {
			return nil, &Error{File: dir, Err: &kustomizeError{err: err}}
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, &Error{File: dir, Err: fmt.Errorf("kustomize: output is %s, not an object", jsonKind(v))}
		}
		if err := checkObject(obj); err != nil {
			return nil, &Error{File: dir, Err: fmt.Errorf("kustomize: %s %q: %w", r.GetKind(), r.GetName(), err)}
		}
		objs = append(objs, &unstructured.Unstructured{Object: obj})
	}
	return objs, nil
}

// checkPluginConfigsInFile is checkPluginConfigs for a whole file; it also returns the
// document that failed.
func checkPluginConfigsInFile(data []byte) (int, error) {
	if !strings.Contains(string(data), "builtin") {
		return 0, nil // fast path for ordinary manifests
	}
	for _, doc := range splitDocuments(data) {
		if err := checkPluginConfigs(doc.text); err != nil {
			return doc.index, err
		}
	}
	return 0, nil
}

// runKrusty runs kustomize in process, with plugins (exec, Go, KRM functions and Helm) off
// and no load restrictions: fsys already confines it to the snapshot. A panic in kustomize
// becomes an error.
func runKrusty(fsys *snapshotFS, target string) (m resmap.ResMap, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("kustomize panicked: %v", r)
		}
	}()
	k := krusty.MakeKustomizer(&krusty.Options{
		// As `kustomize build` without --reorder: the legacy order (namespaces and CRDs
		// first) unless the kustomization sets sortOptions.
		Reorder:          krusty.ReorderOptionUnspecified,
		LoadRestrictions: types.LoadRestrictionsNone,
		PluginConfig:     types.DisabledPluginConfig(),
	})
	return k.Run(fsys, target)
}

// kustomizeError is an error of kustomize, with the paths kustomize sees (under repoRoot)
// turned back into paths relative to the repository root.
type kustomizeError struct{ err error }

func (e *kustomizeError) Error() string {
	msg := e.err.Error()
	for _, quote := range []string{"'", `"`, " ", "(", "="} {
		msg = strings.ReplaceAll(msg, quote+repoRoot+"/", quote)
		msg = strings.ReplaceAll(msg, quote+repoRoot+quote, quote+"."+quote)
	}
	return "kustomize: " + msg
}

func (e *kustomizeError) Unwrap() error { return e.err }

// overlayKustomization returns a kustomization that applies opts on top of the kustomization
// in dir. It lives in the in-memory overlay, so the repository is never modified.
func overlayKustomization(dir string, opts *navarchv1.ApplicationSourceKustomize) ([]byte, error) {
	base := "../" + path.Base(repoRoot)
	if dir != "." {
		base += "/" + dir
	}
	k := types.Kustomization{
		TypeMeta:          types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources:         []string{base},
		NamePrefix:        opts.NamePrefix,
		NameSuffix:        opts.NameSuffix,
		Namespace:         opts.Namespace,
		CommonAnnotations: opts.CommonAnnotations,
	}
	if len(opts.CommonLabels) > 0 {
		// What commonLabels does, without kustomize's deprecation warning.
		k.Labels = []types.Label{{Pairs: opts.CommonLabels, IncludeSelectors: true}}
	}
	for i, s := range opts.Images {
		img, err := parseImage(s)
		if err != nil {
			return nil, fmt.Errorf("spec.source.kustomize.images[%d]: %w", i, err)
		}
		k.Images = append(k.Images, img)
	}
	for i, r := range opts.Replicas {
		switch {
		case r.Name == "":
			return nil, fmt.Errorf("spec.source.kustomize.replicas[%d].name: must not be empty", i)
		case r.Count < 0:
			return nil, fmt.Errorf("spec.source.kustomize.replicas[%d].count: must not be negative", i)
		}
		k.Replicas = append(k.Replicas, types.Replica{Name: r.Name, Count: int64(r.Count)})
	}
	return yaml.Marshal(k)
}

// parseImage parses an image override in the forms `kustomize edit set image` takes:
// "name=newName", "name=newName:tag", "name=newName@digest", "name:tag" and "name@digest".
func parseImage(s string) (types.Image, error) {
	var img types.Image
	name, ref, renamed := strings.Cut(s, "=")
	if !renamed {
		ref = s
	}
	ref, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest {
		if digest == "" {
			return img, fmt.Errorf("image %q: empty digest", s)
		}
		img.Digest = digest
	}
	ref, img.NewTag = splitTag(ref)
	if renamed {
		img.Name, img.NewName = name, ref
	} else {
		img.Name = ref
	}
	switch {
	case img.Name == "":
		return img, fmt.Errorf("image %q: missing image name", s)
	case img.NewName == "" && img.NewTag == "" && img.Digest == "":
		return img, fmt.Errorf("image %q: sets no new name, tag or digest", s)
	}
	return img, nil
}

// splitTag splits "registry:5000/app:1.2" into "registry:5000/app" and "1.2". The tag is after
// the last colon that follows the last slash.
func splitTag(ref string) (name, tag string) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i+1:], "/") {
		return ref, ""
	}
	return ref[:i], ref[i+1:]
}
