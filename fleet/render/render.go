package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// kustomizationNames are the file names that make a directory a kustomization, in kustomize's
// order.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

func isKustomizationName(name string) bool { return slices.Contains(kustomizationNames, name) }

// Render renders src.Path of repo. Objects come back in a stable order (file order for
// directories, kustomize's output order for kustomizations).
//
// repo is the snapshot of the repository, rooted at its root. src.RepoURL and
// src.TargetRevision are not used: the caller has already resolved them to repo. Errors in a
// file are *Error values naming it; see the package documentation for the others.
func Render(repo fs.FS, src navarchv1.ApplicationSource) ([]*unstructured.Unstructured, error) {
	if repo == nil {
		return nil, errors.New("no repository snapshot")
	}
	dir, err := cleanPath(src.Path)
	if err != nil {
		return nil, err
	}
	fi, err := fs.Stat(repo, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()):
		return nil, fmt.Errorf("path %q: %w", src.Path, ErrPathNotFound)
	case err != nil:
		return nil, fmt.Errorf("path %q: %w", src.Path, err)
	}

	if src.Helm != nil || isFile(repo, joinPath(dir, "Chart.yaml")) {
		return nil, &Error{File: dir, Err: ErrHelmNotSupported}
	}
	if kustomization := findKustomization(repo, dir); kustomization != "" {
		return renderKustomization(repo, dir, src.Kustomize)
	}
	if !isZeroKustomize(src.Kustomize) {
		return nil, &Error{File: dir, Err: errors.New(
			"spec.source.kustomize is set but the directory holds no kustomization.yaml, kustomization.yml or Kustomization")}
	}
	return renderDirectory(repo, dir, src.Directory)
}

// cleanPath turns the source path into an fs.FS path: "" and "." are the root; the path must
// stay inside the repository.
func cleanPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q: must be relative to the repository root", p)
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %q: must stay inside the repository", p)
	}
	if !fs.ValidPath(clean) {
		return "", fmt.Errorf("path %q: %w", p, ErrPathNotFound)
	}
	return clean, nil
}

// findKustomization returns the path of the kustomization file of dir, or "".
func findKustomization(repo fs.FS, dir string) string {
	for _, name := range kustomizationNames {
		if p := joinPath(dir, name); isFile(repo, p) {
			return p
		}
	}
	return ""
}

func isFile(repo fs.FS, name string) bool {
	fi, err := fs.Stat(repo, name)
	return err == nil && !fi.IsDir()
}

func isZeroKustomize(k *navarchv1.ApplicationSourceKustomize) bool {
	return k == nil || (k.NamePrefix == "" && k.NameSuffix == "" && k.Namespace == "" &&
		len(k.Images) == 0 && len(k.CommonLabels) == 0 && len(k.CommonAnnotations) == 0 &&
		len(k.Replicas) == 0)
}
