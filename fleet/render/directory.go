package render

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// renderDirectory renders dir, a directory of plain YAML and JSON manifests.
func renderDirectory(repo fs.FS, dir string, opts *navarchv1.ApplicationSourceDirectory) ([]*unstructured.Unstructured, error) {
	var (
		recurse          bool
		include, exclude *glob
	)
	if opts != nil {
		recurse = opts.Recurse
		var err error
		if include, err = optionalGlob("spec.source.directory.include", opts.Include); err != nil {
			return nil, err
		}
		if exclude, err = optionalGlob("spec.source.directory.exclude", opts.Exclude); err != nil {
			return nil, err
		}
	}

	files, err := manifestFiles(repo, dir, recurse)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, rel := range files {
		if include != nil && !include.match(rel) {
			continue
		}
		if exclude != nil && exclude.match(rel) {
			continue
		}
		name := joinPath(dir, rel)
		data, err := fs.ReadFile(repo, name)
		if err != nil {
			return nil, &Error{File: name, Err: err}
		}
		var got []*unstructured.Unstructured
		if strings.HasSuffix(rel, ".json") {
			got, err = parseJSON(name, data)
		} else {
			got, err = parseYAML(name, data)
		}
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

func optionalGlob(field, pattern string) (*glob, error) {
	if pattern == "" {
		return nil, nil
	}
	g, err := compileGlob(pattern)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid pattern %q: %w", field, pattern, err)
	}
	return g, nil
}

// manifestFiles lists the manifest files of dir (and of its subdirectories when recurse is
// set) as paths relative to dir, sorted. Symbolic links to files count as files; symbolic
// links to directories are not followed, as in filepath.Walk, so that a link cannot make a
// cycle.
func manifestFiles(repo fs.FS, dir string, recurse bool) ([]string, error) {
	var files []string
	var walk func(rel string) error
	walk = func(rel string) error {
		full := joinPath(dir, rel)
		entries, err := fs.ReadDir(repo, full)
		if err != nil {
			return &Error{File: full, Err: err}
		}
		for _, e := range entries {
			name := e.Name()
			child := name
			if rel != "." {
				child = rel + "/" + name
			}
			switch {
			case e.IsDir():
				if recurse {
					if err := walk(child); err != nil {
						return err
					}
				}
			case !isManifestName(name):
			case rel != "." && isKustomizationName(name):
				// A kustomization in a subdirectory is not a Kubernetes object.
			case e.Type()&fs.ModeSymlink != 0:
				fi, err := fs.Stat(repo, joinPath(dir, child))
				if err != nil {
					return &Error{File: joinPath(dir, child), Err: err}
				}
				if fi.Mode().IsRegular() {
					files = append(files, child)
				}
			case e.Type().IsRegular():
				files = append(files, child)
			}
		}
		return nil
	}
	if err := walk("."); err != nil {
		return nil, err
	}
	slices.Sort(files)
	return files, nil
}

func isManifestName(name string) bool {
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// joinPath joins a repository directory ("." for the root) and a path relative to it.
func joinPath(dir, rel string) string {
	if dir == "." {
		return rel
	}
	if rel == "." {
		return dir
	}
	return dir + "/" + rel
}
