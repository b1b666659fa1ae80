package gitrepo

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"slices"
	"time"
)

// treeFS is the io/fs view of a snapshot.
type treeFS struct{ s *snapshot }

var (
	_ fs.ReadFileFS = treeFS{}
	_ fs.ReadDirFS  = treeFS{}
	_ fs.StatFS     = treeFS{}
	_ fs.ReadLinkFS = treeFS{}
)

// find validates name and looks it up, turning failures into PathErrors.
func (t treeFS) find(op, name string, follow bool) (*entry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	e, err := t.s.lookup(name, follow)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return e, nil
}

func (t treeFS) Open(name string) (fs.File, error) {
	e, err := t.find("open", name, true)
	if err != nil {
		return nil, err
	}
	if e.isDir() {
		return &openDir{e: e}, nil
	}
	data, err := t.s.read(e)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &openFile{e: e, r: bytes.NewReader(data)}, nil
}

func (t treeFS) ReadFile(name string) ([]byte, error) {
	return t.readFile(name)
}

func (t treeFS) readFile(name string) ([]byte, error) {
	e, err := t.find("read", name, true)
	if err != nil {
		return nil, err
	}
	if e.isDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	data, err := t.s.read(e)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return bytes.Clone(data), nil
}

func (t treeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	e, err := t.find("readdir", name, true)
	if err != nil {
		return nil, err
	}
	if !e.isDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	return dirEntries(e.kids), nil
}

func (t treeFS) Stat(name string) (fs.FileInfo, error) {
	e, err := t.find("stat", name, true)
	if err != nil {
		return nil, err
	}
	return fileInfo{e}, nil
}

func (t treeFS) Lstat(name string) (fs.FileInfo, error) {
	e, err := t.find("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return fileInfo{e}, nil
}

func (t treeFS) ReadLink(name string) (string, error) {
	e, err := t.find("readlink", name, false)
	if err != nil {
		return "", err
	}
	if e.kind != kindSymlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return e.target, nil
}

func dirEntries(kids []*entry) []fs.DirEntry {
	out := make([]fs.DirEntry, len(kids))
	for i, k := range kids {
		out[i] = fileInfo{k}
	}
	return out
}

// fileInfo describes an entry; it is both its fs.FileInfo and fs.DirEntry.
// Git records no times, so ModTime is the zero time.
type fileInfo struct{ e *entry }

func (fi fileInfo) Name() string               { return fi.e.name }
func (fi fileInfo) Size() int64                { return fi.e.size }
func (fi fileInfo) Mode() fs.FileMode          { return fi.e.mode }
func (fi fileInfo) ModTime() time.Time         { return time.Time{} }
func (fi fileInfo) IsDir() bool                { return fi.e.isDir() }
func (fi fileInfo) Sys() any                   { return nil }
func (fi fileInfo) Type() fs.FileMode          { return fi.e.mode.Type() }
func (fi fileInfo) Info() (fs.FileInfo, error) { return fi, nil }
func (fi fileInfo) String() string             { return fs.FormatFileInfo(fi) }

// openFile is an open regular file.
type openFile struct {
	e *entry
	r *bytes.Reader
}

func (f *openFile) Stat() (fs.FileInfo, error) { return fileInfo{f.e}, nil }
func (f *openFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *openFile) ReadAt(p []byte, off int64) (int, error) {
	return f.r.ReadAt(p, off)
}
func (f *openFile) Seek(offset int64, whence int) (int64, error) {
	return f.r.Seek(offset, whence)
}
func (f *openFile) Close() error { return nil }

// openDir is an open directory.
type openDir struct {
	e      *entry
	offset int
}

func (d *openDir) Stat() (fs.FileInfo, error) { return fileInfo{d.e}, nil }
func (d *openDir) Close() error               { return nil }
func (d *openDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.e.path, Err: errors.New("is a directory")}
}

// ReadDir follows fs.ReadDirFile: with n > 0 it returns at most n entries
// and io.EOF at the end; otherwise all remaining entries and a nil error.
func (d *openDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.e.kids[d.offset:]
	if n > 0 {
		if len(rest) == 0 {
			return nil, io.EOF
		}
		rest = rest[:min(n, len(rest))]
	}
	d.offset += len(rest)
	return dirEntries(slices.Clip(rest)), nil
}
