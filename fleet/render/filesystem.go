package render

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Kustomize sees the repository at repoRoot and the generated overlay at overlayRoot, two
// siblings under a virtual "/". The overlay cannot live inside the repository: when the source
// path is the repository root, kustomize would take the overlay's reference to its parent for
// a cycle.
const (
	repoRoot    = "/repo"
	overlayRoot = "/overlay"
)

// errReadOnly is returned for writes outside the overlay.
var errReadOnly = errors.New("the repository snapshot is read-only")

// snapshotFS is kustomize's view of a repository snapshot: a read-only kyaml
// filesys.FileSystem over an fs.FS, plus a small writable in-memory overlay. Files are read
// from the snapshot when kustomize asks for them, never copied up front.
//
// Paths are slash-separated; relative paths are taken from "/". Nothing outside repoRoot and
// overlayRoot exists, and ".." never leads above "/", so kustomize cannot see anything but
// the snapshot.
//
// inspect, when set, sees every file read from the snapshot before kustomize does, and may
// refuse it; see kustomize.go.
type snapshotFS struct {
	repo    fs.FS
	files   map[string][]byte   // overlay files, by absolute path
	dirs    map[string]struct{} // overlay directories, by absolute path
	inspect func(name string, data []byte) error
}

var _ filesys.FileSystem = (*snapshotFS)(nil)

func newSnapshotFS(repo fs.FS) *snapshotFS {
	return &snapshotFS{
		repo:  repo,
		files: map[string][]byte{},
		dirs:  map[string]struct{}{overlayRoot: {}},
	}
}

// area is where a path leads.
type area int

const (
	areaNone    area = iota // outside everything: does not exist
	areaRoot                // the virtual "/"
	areaRepo                // inside the snapshot
	areaOverlay             // inside the overlay
)

// locate cleans p into an absolute path and says where it leads; for the snapshot it also
// returns the fs.FS path.
func locate(p string) (abs string, a area, rel string) {
	abs = filepath.ToSlash(p)
	if !strings.HasPrefix(abs, "/") {
		abs = "/" + abs
	}
	abs = path.Clean(abs)
	switch {
	case abs == "/":
		return abs, areaRoot, ""
	case abs == repoRoot:
		return abs, areaRepo, "."
	case strings.HasPrefix(abs, repoRoot+"/"):
		rel = abs[len(repoRoot)+1:]
		if !fs.ValidPath(rel) {
			return abs, areaNone, ""
		}
		return abs, areaRepo, rel
	case abs == overlayRoot || strings.HasPrefix(abs, overlayRoot+"/"):
		return abs, areaOverlay, ""
	}
	return abs, areaNone, ""
}

// pathError builds an *fs.PathError that names p as the user knows it: relative to the
// repository root for files of the snapshot.
func pathError(op, p string, err error) error {
	abs, a, rel := locate(p)
	name := abs
	if a == areaRepo {
		name = rel
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// stat returns what is at p, following symbolic links in the snapshot.
func (s *snapshotFS) stat(p string) (fs.FileInfo, error) {
	abs, a, rel := locate(p)
	switch a {
	case areaRoot:
		return dirInfo("/"), nil
	case areaRepo:
		fi, err := fs.Stat(s.repo, rel)
		if err != nil {
			return nil, pathError("stat", p, unwrapPathError(err))
		}
		return fi, nil
	case areaOverlay:
		if data, ok := s.files[abs]; ok {
			return fileInfo{name: path.Base(abs), size: int64(len(data))}, nil
		}
		if _, ok := s.dirs[abs]; ok {
			return dirInfo(path.Base(abs)), nil
		}
	}
	return nil, pathError("stat", p, fs.ErrNotExist)
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
	abs, a, _ := locate(p)
	if a != areaOverlay {
		return nil, pathError("create", p, errReadOnly)
	}
	if _, ok := s.dirs[abs]; ok {
		return nil, pathError("create", p, errors.New("is a directory"))
	}
	if _, ok := s.dirs[path.Dir(abs)]; !ok {
		return nil, pathError("create", p, fs.ErrNotExist)
	}
	s.files[abs] = nil
	return &overlayFile{fsys: s, name: abs, writable: true}, nil
}

// Mkdir creates a directory in the overlay.
func (s *snapshotFS) Mkdir(p string) error {
	abs, a, _ := locate(p)
	if a != areaOverlay {
		return pathError("mkdir", p, errReadOnly)
	}
	if s.exists(abs) {
		return pathError("mkdir", p, fs.ErrExist)
	}
	if _, ok := s.dirs[path.Dir(abs)]; !ok {
		return pathError("mkdir", p, fs.ErrNotExist)
	}
	s.dirs[abs] = struct{}{}
	return nil
}

// MkdirAll creates a directory and its missing parents in the overlay.
func (s *snapshotFS) MkdirAll(p string) error {
	abs, a, _ := locate(p)
	if a != areaOverlay {
		return pathError("mkdir", p, errReadOnly)
	}
	for d := abs; d != "/"; d = path.Dir(d) {
		if _, ok := s.files[d]; ok {
			return pathError("mkdir", d, errors.New("not a directory"))
		}
		s.dirs[d] = struct{}{}
	}
	return nil
}

// RemoveAll removes a file or directory tree of the overlay. The overlay's root stays.
func (s *snapshotFS) RemoveAll(p string) error {
	abs, a, _ := locate(p)
	if a != areaOverlay {
		return pathError("remove", p, errReadOnly)
	}
	for name := range s.files {
		if name == abs || strings.HasPrefix(name, abs+"/") {
			delete(s.files, name)
		}
	}
	for name := range s.dirs {
		if name != overlayRoot && (name == abs || strings.HasPrefix(name, abs+"/")) {
			delete(s.dirs, name)
		}
	}
	return nil
}

// Open opens a file or directory for reading.
func (s *snapshotFS) Open(p string) (filesys.File, error) {
	abs, a, rel := locate(p)
	switch a {
	case areaRepo:
		f, err := s.repo.Open(rel)
		if err != nil {
			return nil, pathError("open", p, unwrapPathError(err))
		}
		return readOnlyFile{f}, nil
	case areaOverlay:
		if data, ok := s.files[abs]; ok {
			return &overlayFile{fsys: s, name: abs, r: bytes.NewReader(data)}, nil
		}
	}
	fi, err := s.stat(p)
	if err != nil {
		return nil, pathError("open", p, fs.ErrNotExist)
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
	abs, a, rel := locate(p)
	switch a {
	case areaRoot:
		return []string{path.Base(overlayRoot), path.Base(repoRoot)}, nil
	case areaRepo:
		entries, err := fs.ReadDir(s.repo, rel)
		if err != nil {
			return nil, pathError("readdir", p, unwrapPathError(err))
		}
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		return names, nil
	case areaOverlay:
		if _, ok := s.dirs[abs]; !ok {
			break
		}
		var names []string
		for _, m := range []map[string]struct{}{s.dirs, keysOf(s.files)} {
			for name := range m {
				if name != abs && path.Dir(name) == abs {
					names = append(names, path.Base(name))
				}
			}
		}
		slices.Sort(names)
		return names, nil
	}
	if s.exists(abs) {
		return nil, pathError("readdir", p, errors.New("not a directory"))
	}
	return nil, pathError("readdir", p, fs.ErrNotExist)
}

func keysOf(m map[string][]byte) map[string]struct{} {
	keys := make(map[string]struct{}, len(m))
	for k := range m {
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
	abs, _, _ := locate(p)
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
	abs, _, _ := locate(pattern)
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

// ReadFile returns the content of the file p.
func (s *snapshotFS) ReadFile(p string) ([]byte, error) {
	abs, a, rel := locate(p)
	switch a {
	case areaRepo:
		data, err := fs.ReadFile(s.repo, rel)
		if err != nil {
			if s.IsDir(p) {
				return nil, pathError("read", p, errors.New("is a directory"))
			}
			return nil, pathError("read", p, unwrapPathError(err))
		}
		if s.inspect != nil {
			if err := s.inspect(rel, data); err != nil {
				return nil, err
			}
		}
		return data, nil
	case areaOverlay:
		if data, ok := s.files[abs]; ok {
			return bytes.Clone(data), nil
		}
	}
	if s.IsDir(p) {
		return nil, pathError("read", p, errors.New("is a directory"))
	}
	return nil, pathError("read", p, fs.ErrNotExist)
}

// WriteFile writes a file of the overlay.
func (s *snapshotFS) WriteFile(p string, data []byte) error {
	abs, a, _ := locate(p)
	if a != areaOverlay {
		return pathError("write", p, errReadOnly)
	}
	if _, ok := s.dirs[abs]; ok {
		return pathError("write", p, errors.New("is a directory"))
	}
	if _, ok := s.dirs[path.Dir(abs)]; !ok {
		return pathError("write", p, fs.ErrNotExist)
	}
	s.files[abs] = bytes.Clone(data)
	return nil
}

// Walk walks the tree at p in lexical order, as filepath.Walk does. Like filepath.Walk, it
// does not follow symbolic links to directories, so it always ends.
func (s *snapshotFS) Walk(p string, walkFn filepath.WalkFunc) error {
	abs, _, _ := locate(p)
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
	_, a, rel := locate(p)
	if a != areaRepo || rel == "." {
		return s.stat(p)
	}
	entries, err := fs.ReadDir(s.repo, path.Dir(rel))
	if err != nil {
		return nil, pathError("lstat", p, unwrapPathError(err))
	}
	base := path.Base(rel)
	for _, e := range entries {
		if e.Name() == base {
			return e.Info()
		}
	}
	return nil, pathError("lstat", p, fs.ErrNotExist)
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
