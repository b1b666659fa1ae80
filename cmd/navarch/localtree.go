package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/navarch-io/navarch/generators"
)

// localTree is a directory on disk read as if it were a Git tree, for --repo-override: the
// working tree as it is, uncommitted changes included, so a change can be previewed before it
// is pushed. A .git directory is skipped.
type localTree struct {
	root  string
	dirs  []string
	files []string
}

func readLocalTree(root string) (*localTree, error) {
	t := &localTree{root: root}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			t.dirs = append(t.dirs, rel)
		case d.Type().IsRegular():
			t.files = append(t.files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", root, err)
	}
	sort.Strings(t.dirs)
	sort.Strings(t.files)
	return t, nil
}

func (t *localTree) Commit() string  { return "local:" + t.root }
func (t *localTree) Dirs() []string  { return t.dirs }
func (t *localTree) Files() []string { return t.files }

func (t *localTree) ReadFile(name string) ([]byte, error) {
	clean := path.Clean(name)
	if !fs.ValidPath(clean) {
		return nil, fmt.Errorf("read %s: %w", name, fs.ErrInvalid)
	}
	return os.ReadFile(filepath.Join(t.root, filepath.FromSlash(clean)))
}

// overrideReader serves repositories named by --repo-override from local directories and
// every other repository from next.
type overrideReader struct {
	dirs map[string]string // normalised repo URL → directory
	next generators.GitReader
}

func (r *overrideReader) Snapshot(ctx context.Context, repoURL, revision string) (generators.GitTree, error) {
	if dir, ok := r.dirs[normaliseRepoURL(repoURL)]; ok {
		return readLocalTree(dir)
	}
	if r.next == nil {
		return nil, fmt.Errorf("%s: no Git reader configured", repoURL)
	}
	return r.next.Snapshot(ctx, repoURL, revision)
}

// normaliseRepoURL makes https://host/org/repo, https://host/org/repo.git and
// https://host/org/repo/ the same key.
func normaliseRepoURL(u string) string {
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(u), "/"), ".git")
}

// parseRepoOverrides parses URL=DIR flags.
func parseRepoOverrides(flags []string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range flags {
		url, dir, ok := strings.Cut(f, "=")
		if !ok || url == "" || dir == "" {
			return nil, fmt.Errorf("--repo-override %q: want URL=DIR", f)
		}
		info, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("--repo-override %s: %w", f, err)
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("--repo-override %s: %s is not a directory", f, dir)
		}
		out[normaliseRepoURL(url)] = dir
	}
	return out, nil
}
