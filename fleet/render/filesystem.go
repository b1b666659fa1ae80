package render

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Kustomize sees, under a virtual "/", the repository at repoRoot, the generated overlay at
// overlayRoot, the snapshots of remote bases at remoteRoot/<id> and the rendered Helm charts
// of helmCharts under helmRoot. The overlay cannot live inside the repository: when the
// source path is the repository root, kustomize would take the overlay's reference to its
// parent for a cycle.
const (
	repoRoot    = "/repo"
	overlayRoot = "/overlay"
	remoteRoot  = "/remote"
	helmRoot    = "/helm"
)

// errReadOnly is returned for writes outside the overlay.
var errReadOnly = errors.New("the repository snapshot is read-only")

// snapshotFS is kustomize's view of a repository snapshot: a read-only kyaml
// filesys.FileSystem over an fs.FS, plus a small writable in-memory overlay. Files are read
// from the snapshot when kustomize asks for them, never copied up front. Other snapshots
// (remote bases) can be mounted beside the repository, and rendered charts added as
// read-only in-memory files.
//
// Paths are slash-separated; relative paths are taken from "/". Nothing outside the mounts,
// the overlay and the rendered charts exists, and ".." never leads above "/", so kustomize
// cannot see anything but the snapshots.
//
// inspect, when set, sees every file read from a snapshot or the overlay before kustomize
// does, by its absolute path, and may refuse it or give kustomize other content; see
// kustomize.go.
type snapshotFS struct {
	mounts  map[string]fs.FS    // snapshots by their absolute root: repoRoot, remoteRoot/<id>
	files   map[string][]byte   // overlay files, by absolute path
	dirs    map[string]struct{} // overlay directories, by absolute path
	helm    map[string][]byte   // rendered charts, by absolute path under helmRoot
	inspect func(name string, data []byte) ([]byte, error)
}

var _ filesys.FileSystem = (*snapshotFS)(nil)

func newSnapshotFS(repo fs.FS) *snapshotFS {
	return &snapshotFS{
		mounts: map[string]fs.FS{repoRoot: repo},
		files:  map[string][]byte{},
		dirs:   map[string]struct{}{overlayRoot: {}},
		helm:   map[string][]byte{},
	}
}

// mount shows fsys at remoteRoot/id.
func (s *snapshotFS) mount(id string, fsys fs.FS) { s.mounts[remoteRoot+"/"+id] = fsys }

// area is where a path leads.
type area int

const (
	areaNone    area = iota // outside everything: does not exist
	areaVirtual             // a directory that holds the others: "/" or remoteRoot
	areaMount               // inside a snapshot
	areaOverlay             // inside the overlay
	areaHelm                // inside the rendered charts
)

// location is where a path leads: for a snapshot, which one (its root) and the fs.FS path in
// it.
type location struct {
	abs  string
	area area
	root string
	rel  string
}

// locate cleans p into an absolute path and says where it leads.
func (s *snapshotFS) locate(p string) location {
	abs := filepath.ToSlash(p)
	if !strings.HasPrefix(abs, "/") {
		abs = "/" + abs
	}
	abs = path.Clean(abs)
	l := location{abs: abs}
	switch {
	case abs == "/":
		l.area = areaVirtual
	case abs == overlayRoot || strings.HasPrefix(abs, overlayRoot+"/"):
		l.area = areaOverlay
	case abs == helmRoot || strings.HasPrefix(abs, helmRoot+"/"):
		if len(s.helm) > 0 {
			l.area = areaHelm
		}
	case abs == remoteRoot:
		if len(s.mounts) > 1 {
			l.area = areaVirtual
		}
	default:
		root, rel := abs, "."
		if strings.HasPrefix(abs, remoteRoot+"/") {
			// remoteRoot/<id>/rel
			id, rest, _ := strings.Cut(abs[len(remoteRoot)+1:], "/")
			root = remoteRoot + "/" + id
			if rest != "" {
				rel = rest
			}
		} else if r, rest, ok := strings.Cut(abs[1:], "/"); ok {
			root, rel = "/"+r, rest
		}
		if _, ok := s.mounts[root]; ok && fs.ValidPath(rel) {
			l.area, l.root, l.rel = areaMount, root, rel
		}
	}
	return l
}

// pathError builds an *fs.PathError that names p as the user knows it: relative to the
// repository root for files of the repository.
func (s *snapshotFS) pathError(op, p string, err error) error {
	l := s.locate(p)
	name := l.abs
	if l.area == areaMount && l.root == repoRoot {
		name = l.rel
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// virtualEntries returns the names in a virtual directory.
func (s *snapshotFS) virtualEntries(abs string) []string {
	var names []string
	if abs == "/" {
		names = []string{path.Base(overlayRoot), path.Base(repoRoot)}
		if len(s.mounts) > 1 {
			names = append(names, path.Base(remoteRoot))
		}
		if len(s.helm) > 0 {
			names = append(names, path.Base(helmRoot))
		}
	} else {
		for root := range s.mounts {
			if path.Dir(root) == abs {
				names = append(names, path.Base(root))
			}
		}
	}
	slices.Sort(names)
	return names
}

// stat returns what is at p, following symbolic links in the snapshots.
func (s *snapshotFS) stat(p string) (fs.FileInfo, error) {
	l := s.locate(p)
	switch l.area {
	case areaVirtual:
		return dirInfo(path.Base(l.abs)), nil
	case areaMount:
		fi, err := fs.Stat(s.mounts[l.root], l.rel)
		if err != nil {
			return nil, s.pathError("stat", p, unwrapPathError(err))
		}
		return fi, nil
	case areaOverlay:
		if data, ok := s.files[l.abs]; ok {
			return fileInfo{name: path.Base(l.abs), size: int64(len(data))}, nil
		}
		if _, ok := s.dirs[l.abs]; ok {
			return dirInfo(path.Base(l.abs)), nil
		}
	case areaHelm:
		if l.abs == helmRoot {
			return dirInfo(path.Base(l.abs)), nil
		}
		if data, ok := s.helm[l.abs]; ok {
			return fileInfo{name: path.Base(l.abs), size: int64(len(data))}, nil
		}
	}
	return nil, s.pathError("stat", p, fs.ErrNotExist)
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Create creates an empty file in the overlay and opens it for writing.
func (s *snapshotFS) Create(p string) (filesys.File, error) {
	l := s.locate(p)
	if l.area != areaOverlay {
		return nil, s.pathError("create", p, errReadOnly)
	}
	if _, ok := s.dirs[l.abs]; ok {
		return nil, s.pathError("create", p, errors.New("is a directory"))
	}
	if _, ok := s.dirs[path.Dir(l.abs)]; !ok {
		return nil, s.pathError("create", p, fs.ErrNotExist)
	}
	s.files[l.abs] = nil
	return &overlayFile{fsys: s, name: l.abs, writable: true}, nil
}

// Mkdir creates a directory in the overlay.
func (s *snapshotFS) Mkdir(p string) error {
	l := s.locate(p)
	if l.area != areaOverlay {
		return s.pathError("mkdir", p, errReadOnly)
	}
	if s.exists(l.abs) {
		return s.pathError("mkdir", p, fs.ErrExist)
	}
	if _, ok := s.dirs[path.Dir(l.abs)]; !ok {
		return s.pathError("mkdir", p, fs.ErrNotExist)
	}
	s.dirs[l.abs] = struct{}{}
	return nil
}

// MkdirAll creates a directory and its missing parents in the overlay.
func (s *snapshotFS) MkdirAll(p string) error {
	l := s.locate(p)
	if l.area != areaOverlay {
		return s.pathError("mkdir", p, errReadOnly)
	}
	for d := l.abs; d != "/"; d = path.Dir(d) {
		if _, ok := s.files[d]; ok {
			return s.pathError("mkdir", d, errors.New("not a directory"))
		}
		s.dirs[d] = struct{}{}
	}
	return nil
}

// RemoveAll removes a file or directory tree of the overlay. The overlay's root stays.
func (s *snapshotFS) RemoveAll(p string) error {
	l := s.locate(p)
	if l.area != areaOverlay {
		return s.pathError("remove", p, errReadOnly)
	}
	for name := range s.files {
		if name == l.abs || strings.HasPrefix(name, l.abs+"/") {
			delete(s.files, name)
		}
	}
	for name := range s.dirs {
		if name != overlayRoot && (name == l.abs || strings.HasPrefix(name, l.abs+"/")) {
			delete(s.dirs, name)
		}
	}
	return nil
}

// Open opens a file or directory for reading.
func (s *snapshotFS) Open(p string) (filesys.File, error) {
	l := s.locate(p)
	switch l.area {
	case areaMount:
		f, err := s.mounts[l.root].Open(l.rel)
		if err != nil {
			return nil, s.pathError("open", p, unwrapPathError(err))
		}
		return readOnlyFile{f}, nil
	case areaOverlay:
		if data, ok := s.files[l.abs]; ok {
			return &overlayFile{fsys: s, name: l.abs, r: bytes.NewReader(data)}, nil
		}
	case areaHelm:
		if data, ok := s.helm[l.abs]; ok {
			return &overlayFile{fsys: s, name: l.abs, r: bytes.NewReader(data)}, nil
		}
	}
	fi, err := s.stat(p)
	if err != nil {
		return nil, s.pathError("open", p, fs.ErrNotExist)
	}
	return dirFile{fi}, nil
}

// IsDir reports whether p is a directory.
func (s *snapshotFS) IsDir(p string) bool {
	fi, err := s.stat(p)
	return err == nil && fi.IsDir()
}

// ReadDir returns the names of the entries of the directory p, sorted.
func (s *snapshotFS) ReadDir(p string) ([]string, error) {
	l := s.locate(p)
	switch l.area {
	case areaVirtual:
		return s.virtualEntries(l.abs), nil
	case areaMount:
		entries, err := fs.ReadDir(s.mounts[l.root], l.rel)
		if err != nil {
			return nil, s.pathError("readdir", p, unwrapPathError(err))
		}
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		return names, nil
	case areaOverlay:
		if _, ok := s.dirs[l.abs]; !ok {
			break
		}
		return childNames(l.abs, s.dirs, keysOf(s.files)), nil
	case areaHelm:
		if l.abs == helmRoot {
			return childNames(l.abs, keysOf(s.helm)), nil
		}
	}
	if s.exists(l.abs) {
		return nil, s.pathError("readdir", p, errors.New("not a directory"))
	}
	return nil, s.pathError("readdir", p, fs.ErrNotExist)
}

// childNames returns the sorted names of the entries of dir among the paths of sets.
func childNames(dir string, sets ...map[string]struct{}) []string {
	var names []string
	for _, set := range sets {
		for name := range set {
			if name != dir && path.Dir(name) == dir {
				names = append(names, path.Base(name))
			}
		}
	}
	slices.Sort(names)
	return names
}

func keysOf(m map[string][]byte) map[string]struct{} {
	keys := make(map[string]struct{}, len(m))
	for k := range maps.Keys(m) {
		keys[k] = struct{}{}
	}
	return keys
}

// CleanedAbs returns p's directory and file name; the file name is empty when p is a
// directory. p must exist.
func (s *snapshotFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	fi, err := s.stat(p)
	if err != nil {
		return "", "", err
	}
	abs := s.locate(p).abs
	if fi.IsDir() {
		return filesys.ConfirmedDir(abs), "", nil
	}
	return filesys.ConfirmedDir(path.Dir(abs)), path.Base(abs), nil
}

// Exists reports whether p exists.
func (s *snapshotFS) Exists(p string) bool { return s.exists(p) }

func (s *snapshotFS) exists(p string) bool {
	_, err := s.stat(p)
	return err == nil
}

// Glob returns the paths matching pattern, as filepath.Glob does, sorted.
func (s *snapshotFS) Glob(pattern string) ([]string, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, err
	}
	abs := s.locate(pattern).abs
	matches := []string{"/"}
	for _, part := range strings.Split(strings.TrimPrefix(abs, "/"), "/") {
		if part == "" {
			continue
		}
		var next []string
		for _, dir := range matches {
			if !strings.ContainsAny(part, `*?[\`) {
				if p := path.Join(dir, part); s.exists(p) {
					next = append(next, p)
				}
				continue
			}
			names, err := s.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, name := range names {
				if ok, _ := path.Match(part, name); ok {
					next = append(next, path.Join(dir, name))
				}
			}
		}
		matches = next
	}
	slices.Sort(matches)
	return matches, nil
}

// ReadFile returns the content of the file p, as inspect lets kustomize see it.
func (s *snapshotFS) ReadFile(p string) ([]byte, error) {
	l := s.locate(p)
	var data []byte
	switch l.area {
	case areaMount:
		var err error
		data, err = fs.ReadFile(s.mounts[l.root], l.rel)
		if err != nil {
			if s.IsDir(p) {
				return nil, s.pathError("read", p, errors.New("is a directory"))
			}
			return nil, s.pathError("read", p, unwrapPathError(err))
		}
	case areaOverlay:
		d, ok := s.files[l.abs]
		if !ok {
			break
		}
		data = bytes.Clone(d)
	case areaHelm:
		if d, ok := s.helm[l.abs]; ok {
			return bytes.Clone(d), nil // rendered here: nothing to inspect
		}
	}
	if data == nil {
		if s.IsDir(p) {
			return nil, s.pathError("read", p, errors.New("is a directory"))
		}
		return nil, s.pathError("read", p, fs.ErrNotExist)
	}
	if s.inspect != nil {
		return s.inspect(l.abs, data)
	}
	return data, nil
}

// readSnapshotFile returns the content of the file p of a snapshot, unseen by inspect.
func (s *snapshotFS) readSnapshotFile(p string) ([]byte, error) {
	l := s.locate(p)
	if l.area != areaMount {
		return nil, s.pathError("read", p, fs.ErrNotExist)
	}
	data, err := fs.ReadFile(s.mounts[l.root], l.rel)
	if err != nil {
		return nil, s.pathError("read", p, unwrapPathError(err))
	}
	return data, nil
}

// WriteFile writes a file of the overlay.
func (s *snapshotFS) WriteFile(p string, data []byte) error {
	l := s.locate(p)
	if l.area != areaOverlay {
		return s.pathError("write", p, errReadOnly)
	}
	if _, ok := s.dirs[l.abs]; ok {
		return s.pathError("write", p, errors.New("is a directory"))
	}
	if _, ok := s.dirs[path.Dir(l.abs)]; !ok {
		return s.pathError("write", p, fs.ErrNotExist)
	}
	s.files[l.abs] = bytes.Clone(data)
	return nil
}

// Walk walks the tree at p in lexical order, as filepath.Walk does. Like filepath.Walk, it
// does not follow symbolic links to directories, so it always ends.
func (s *snapshotFS) Walk(p string, walkFn filepath.WalkFunc) error {
	abs := s.locate(p).abs
	fi, err := s.lstat(abs)
	if err != nil {
		err = walkFn(abs, nil, err)
	} else {
		err = s.walk(abs, fi, walkFn)
	}
	if errors.Is(err, filepath.SkipDir) || errors.Is(err, filepath.SkipAll) {
		return nil
	}
	return err
}

// lstat is stat without following a symbolic link in the last element.
func (s *snapshotFS) lstat(p string) (fs.FileInfo, error) {
	l := s.locate(p)
	if l.area != areaMount || l.rel == "." {
		return s.stat(p)
	}
	entries, err := fs.ReadDir(s.mounts[l.root], path.Dir(l.rel))
	if err != nil {
		return nil, s.pathError("lstat", p, unwrapPathError(err))
	}
	base := path.Base(l.rel)
	for _, e := range entries {
		if e.Name() == base {
			return e.Info()
		}
	}
	return nil, s.pathError("lstat", p, fs.ErrNotExist)
}

func (s *snapshotFS) walk(p string, fi fs.FileInfo, walkFn filepath.WalkFunc) error {
	if !fi.IsDir() {
		return walkFn(p, fi, nil)
	}
	names, err := s.ReadDir(p)
	err1 := walkFn(p, fi, err)
	if err != nil || err1 != nil {
		return err1
	}
	for _, name := range names {
		child := path.Join(p, name)
		cfi, err := s.lstat(child)
		if err != nil {
			if err := walkFn(child, cfi, err); err != nil && !errors.Is(err, filepath.SkipDir) {
				return err
			}
			continue
		}
		if err := s.walk(child, cfi, walkFn); err != nil {
			if !cfi.IsDir() || !errors.Is(err, filepath.SkipDir) {
				return err
			}
		}
	}
	return nil
}

// readOnlyFile is a file of the snapshot.
type readOnlyFile struct{ fs.File }

func (readOnlyFile) Write([]byte) (int, error) { return 0, errReadOnly }

// dirFile is an open virtual directory.
type dirFile struct{ fi fs.FileInfo }

func (d dirFile) Read([]byte) (int, error)   { return 0, errors.New("is a directory") }
func (d dirFile) Write([]byte) (int, error)  { return 0, errReadOnly }
func (d dirFile) Close() error               { return nil }
func (d dirFile) Stat() (fs.FileInfo, error) { return d.fi, nil }

// overlayFile is an open file of the overlay. A file opened by Create collects what is written
// and stores it on Close.
type overlayFile struct {
	fsys     *snapshotFS
	name     string
	r        *bytes.Reader
	w        bytes.Buffer
	writable bool
}

func (f *overlayFile) Read(p []byte) (int, error) {
	if f.r == nil {
		return 0, io.EOF
	}
	return f.r.Read(p)
}

func (f *overlayFile) Write(p []byte) (int, error) {
	if !f.writable {
		return 0, errReadOnly
	}
	return f.w.Write(p)
}

func (f *overlayFile) Close() error {
	if f.writable {
		f.fsys.files[f.name] = bytes.Clone(f.w.Bytes())
		f.writable = false
	}
	return nil
}

func (f *overlayFile) Stat() (fs.FileInfo, error) {
	size := f.w.Len()
	if f.r != nil {
		size = int(f.r.Size())
	}
	return fileInfo{name: path.Base(f.name), size: int64(size)}, nil
}

// fileInfo describes a file of the overlay.
type fileInfo struct {
	name string
	size int64
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.size }
func (fi fileInfo) Mode() fs.FileMode  { return 0o444 }
func (fi fileInfo) ModTime() time.Time { return time.Time{} }
func (fi fileInfo) IsDir() bool        { return false }
func (fi fileInfo) Sys() any           { return nil }

// dirInfo describes a virtual directory.
type dirInfo string

func (d dirInfo) Name() string       { return string(d) }
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o555 }
func (d dirInfo) ModTime() time.Time { return time.Time{} }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }
