package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Snapshot is the tree of one commit, read-only. Snapshots are shared
// between callers and cached; they never change. Listing is in memory; file
// contents are read from the local mirror on first use and cached.
//
// It is an interface so that consumers (the generators, their tests) can
// also build snapshots from other sources, such as an fstest.MapFS.
type Snapshot interface {
	// Commit is the full SHA of the commit.
	Commit() string
	// Dirs lists every directory of the tree, slash-separated, relative
	// to the root (which is not listed), sorted. Submodules are listed
	// as (empty) directories: their content is not fetched.
	Dirs() []string
	// Files lists every file, sorted. Symbolic links are files too, as in
	// Git.
	Files() []string
	// ReadFile returns the content of the file at name (slash-separated,
	// relative to the root; a leading slash is ignored), following
	// symbolic links that stay inside the tree. A missing file is an
	// error wrapping fs.ErrNotExist. The caller owns the returned slice.
	ReadFile(name string) ([]byte, error)
	// FS returns a read-only io/fs view of the tree. It implements
	// fs.ReadFileFS, fs.ReadDirFS, fs.StatFS and fs.ReadLinkFS; like
	// os.DirFS it follows symbolic links on Open and Stat but not in
	// ReadDir or fs.WalkDir.
	FS() fs.FS
}

// entryKind is what a tree entry is.
type entryKind uint8

const (
	kindFile entryKind = iota
	kindDir
	kindSymlink
	kindSubmodule // a gitlink: shown as an empty directory
)

// entry is one path of a tree.
type entry struct {
	name   string // base name; "." for the root
	path   string // full path; "." for the root
	kind   entryKind
	mode   fs.FileMode
	oid    string
	size   int64
	target string   // symbolic links: where they point
	kids   []*entry // directories: children sorted by name
}

func (e *entry) isDir() bool { return e.kind == kindDir || e.kind == kindSubmodule }

// snapshot implements Snapshot for a commit in a repository mirror.
type snapshot struct {
	reader *Reader
	repo   *repo
	commit string
	root   *entry
	byPath map[string]*entry // every entry but the root
	dirs   []string
	files  []string
}

func (s *snapshot) Commit() string  { return s.commit }
func (s *snapshot) Dirs() []string  { return slices.Clone(s.dirs) }
func (s *snapshot) Files() []string { return slices.Clone(s.files) }
func (s *snapshot) FS() fs.FS       { return treeFS{s} }
func (s *snapshot) String() string  { return s.repo.url + "@" + s.commit }

func (s *snapshot) ReadFile(name string) ([]byte, error) {
	clean := path.Clean("/" + name)[1:]
	if clean == "" {
		clean = "."
	}
	data, err := treeFS{s}.readFile(clean)
	if err != nil {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			pe.Path = name
		}
		return nil, err
	}
	return data, nil
}

// maxSymlinks bounds how many symbolic links one lookup follows, as the
// kernel does, to stop loops.
const maxSymlinks = 40

// errOutsideTree is the error for a symbolic link leading out of the tree:
// it cannot be followed without reading the host's file system.
var errOutsideTree = errors.New("symbolic link points outside the repository")

// lookup finds the entry at name, a valid fs path, following symbolic links
// in the directories leading to it, and in the last element if follow is
// set.
func (s *snapshot) lookup(name string, follow bool) (*entry, error) {
	if name == "." {
		return s.root, nil
	}
	parts := strings.Split(name, "/")
	links := 0
	cur := s.root
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		childPath := p
		if cur != s.root {
			childPath = cur.path + "/" + p
		}
		e, ok := s.byPath[childPath]
		if !ok {
			return nil, fs.ErrNotExist
		}
		last := i == len(parts)-1
		if e.kind == kindSymlink && (!last || follow) {
			links++
			if links > maxSymlinks {
				return nil, errors.New("too many levels of symbolic links")
			}
			if strings.HasPrefix(e.target, "/") {
				return nil, errOutsideTree
			}
			dest := path.Join(path.Dir(e.path), e.target)
			if dest == ".." || strings.HasPrefix(dest, "../") {
				return nil, errOutsideTree
			}
			// Continue from the root with the link replaced by its
			// destination.
			rest := parts[i+1:]
			parts = nil
			if dest != "." {
				parts = strings.Split(dest, "/")
			}
			parts = append(parts, rest...)
			if len(parts) == 0 {
				return s.root, nil
			}
			cur, i = s.root, -1
			continue
		}
		if !last && !e.isDir() {
			return nil, fs.ErrNotExist
		}
		cur = e
	}
	return cur, nil
}

// read returns the shared, cached content of a file entry. Callers must
// not modify it.
func (s *snapshot) read(e *entry) ([]byte, error) {
	return s.reader.readBlob(s.repo, e.oid)
}

// treeEntry is one line of git ls-tree -l.
type treeEntry struct {
	mode string
	typ  string
	oid  string
	size int64
	path string
}

// parseLsTree reads the output of git ls-tree -r -t -l -z: records of
// "<mode> <type> <object> <size>\t<path>", NUL-terminated. Size is "-" for
// trees and submodules.
func parseLsTree(out []byte) ([]treeEntry, error) {
	var entries []treeEntry
	for len(out) > 0 {
		rec, rest, _ := bytes.Cut(out, []byte{0})
		out = rest
		meta, p, ok := bytes.Cut(rec, []byte{'\t'})
		fields := strings.Fields(string(meta))
		if !ok || len(fields) != 4 || len(p) == 0 {
			return nil, fmt.Errorf("unexpected ls-tree record %q", rec)
		}
		e := treeEntry{mode: fields[0], typ: fields[1], oid: fields[2], path: string(p)}
		if fields[3] != "-" {
			size, err := strconv.ParseInt(fields[3], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("unexpected ls-tree record %q", rec)
			}
			e.size = size
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// buildSnapshot lists the tree of commit in the mirror and builds its
// snapshot. Symbolic link targets are read right away, so that path lookups
// never need git.
func (r *Reader) buildSnapshot(ctx context.Context, rp *repo, commit string) (*snapshot, error) {
	out, err := r.run(ctx, rp.dir, nil, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", commit)
	if err != nil {
		return nil, fmt.Errorf("list tree: %w", err)
	}
	list, err := parseLsTree(out)
	if err != nil {
		return nil, fmt.Errorf("list tree: %w", err)
	}
	s := &snapshot{
		reader: r,
		repo:   rp,
		commit: commit,
		root:   &entry{name: ".", path: ".", kind: kindDir, mode: fs.ModeDir | 0o755},
		byPath: make(map[string]*entry, len(list)),
	}
	for _, te := range list {
		e := &entry{name: path.Base(te.path), path: te.path, oid: te.oid, size: te.size}
		switch {
		case te.typ == "tree":
			e.kind, e.mode = kindDir, fs.ModeDir|0o755
			s.dirs = append(s.dirs, te.path)
		case te.typ == "commit":
			e.kind, e.mode = kindSubmodule, fs.ModeDir|0o755
			s.dirs = append(s.dirs, te.path)
		case te.mode == "120000":
			e.kind, e.mode = kindSymlink, fs.ModeSymlink|0o777
			s.files = append(s.files, te.path)
		case te.mode == "100755":
			e.kind, e.mode = kindFile, 0o755
			s.files = append(s.files, te.path)
		default:
			e.kind, e.mode = kindFile, 0o644
			s.files = append(s.files, te.path)
		}
		parent := s.root
		if dir := path.Dir(te.path); dir != "." {
			// ls-tree -t lists a tree before its contents.
			parent = s.byPath[dir]
			if parent == nil {
				return nil, fmt.Errorf("list tree: %s listed before its directory", te.path)
			}
		}
		parent.kids = append(parent.kids, e)
		s.byPath[te.path] = e
		if e.kind == kindSymlink {
			target, err := r.readBlob(rp, e.oid)
			if err != nil {
				return nil, fmt.Errorf("read symbolic link %s: %w", te.path, err)
			}
			e.target = string(target)
		}
	}
	// Git orders a tree's entries as if directory names ended in '/';
	// fs.ReadDir wants plain name order.
	sortKids(s.root)
	for _, e := range s.byPath {
		sortKids(e)
	}
	slices.Sort(s.dirs)
	slices.Sort(s.files)
	return s, nil
}

func sortKids(e *entry) {
	slices.SortFunc(e.kids, func(a, b *entry) int { return strings.Compare(a.name, b.name) })
}
