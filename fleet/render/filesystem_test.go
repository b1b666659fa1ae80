package render

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
)

func testFS() *snapshotFS {
	return newSnapshotFS(fstest.MapFS{
		"base/deploy.yaml":  file("deploy"),
		"base/svc.yaml":     file("svc"),
		"base/sub/x.yaml":   file("x"),
		"base/notes.txt":    file("notes"),
		"apps/web/app.yaml": file("app"),
	})
}

func TestSnapshotFSIsReadOnly(t *testing.T) {
	fsys := testFS()
	for _, p := range []string{"/repo/base/new.yaml", "/repo/base/deploy.yaml", "/repo", "/", "/elsewhere/x", "repo/base/x"} {
		if _, err := fsys.Create(p); !errors.Is(err, errReadOnly) {
			t.Errorf("Create(%q) = %v, want read-only", p, err)
		}
		if err := fsys.WriteFile(p, []byte("x")); !errors.Is(err, errReadOnly) {
			t.Errorf("WriteFile(%q) = %v, want read-only", p, err)
		}
		if err := fsys.Mkdir(p); !errors.Is(err, errReadOnly) {
			t.Errorf("Mkdir(%q) = %v, want read-only", p, err)
		}
		if err := fsys.MkdirAll(p); !errors.Is(err, errReadOnly) {
			t.Errorf("MkdirAll(%q) = %v, want read-only", p, err)
		}
		if err := fsys.RemoveAll(p); !errors.Is(err, errReadOnly) {
			t.Errorf("RemoveAll(%q) = %v, want read-only", p, err)
		}
	}
	f, err := fsys.Open("/repo/base/deploy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); !errors.Is(err, errReadOnly) {
		t.Errorf("Write = %v, want read-only", err)
	}
	if data, err := io.ReadAll(f); err != nil || string(data) != "deploy" {
		t.Errorf("Read = %q, %v", data, err)
	}
}

func TestSnapshotFSOverlay(t *testing.T) {
	fsys := testFS()
	if err := fsys.WriteFile("/overlay/kustomization.yaml", []byte("k")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.MkdirAll("/overlay/a/b"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Mkdir("/overlay/a/c"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Mkdir("/overlay/a/c"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Mkdir = %v, want exists", err)
	}
	f, err := fsys.Create("/overlay/a/b/file")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("written")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if data, err := fsys.ReadFile("/overlay/a/b/file"); err != nil || string(data) != "written" {
		t.Errorf("ReadFile = %q, %v", data, err)
	}
	if got, err := fsys.ReadDir("/overlay"); err != nil || !slices.Equal(got, []string{"a", "kustomization.yaml"}) {
		t.Errorf("ReadDir(/overlay) = %q, %v", got, err)
	}
	if got, err := fsys.ReadDir("/"); err != nil || !slices.Equal(got, []string{"overlay", "repo"}) {
		t.Errorf("ReadDir(/) = %q, %v", got, err)
	}
	if err := fsys.WriteFile("/overlay/missing/x", nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WriteFile without a parent = %v, want not exist", err)
	}
	if err := fsys.RemoveAll("/overlay/a"); err != nil {
		t.Fatal(err)
	}
	if fsys.Exists("/overlay/a/b/file") || fsys.Exists("/overlay/a") || !fsys.IsDir("/overlay") {
		t.Errorf("RemoveAll left /overlay/a or removed /overlay")
	}
}

func TestSnapshotFSReads(t *testing.T) {
	fsys := testFS()

	if data, err := fsys.ReadFile("/repo/base/../base/./deploy.yaml"); err != nil || string(data) != "deploy" {
		t.Errorf("ReadFile = %q, %v", data, err)
	}
	if data, err := fsys.ReadFile("repo/base/svc.yaml"); err != nil || string(data) != "svc" {
		t.Errorf("ReadFile of a relative path = %q, %v", data, err)
	}
	_, err := fsys.ReadFile("/repo/base/missing.yaml")
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != "read base/missing.yaml: file does not exist" {
		t.Errorf("ReadFile of a missing file = %v", err)
	}
	if _, err := fsys.ReadFile("/repo/base"); err == nil || err.Error() != "read base: is a directory" {
		t.Errorf("ReadFile of a directory = %v", err)
	}

	// Nothing outside the snapshot and the overlay exists, and ".." stops at "/".
	for _, p := range []string{"/etc/passwd", "/repo/../../../etc/passwd", "../../etc/passwd", "/proc/self/environ"} {
		if fsys.Exists(p) {
			t.Errorf("Exists(%q)", p)
		}
		if _, err := fsys.ReadFile(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(%q) = %v, want not exist", p, err)
		}
	}
	if !fsys.IsDir("/repo/../repo/base") || fsys.IsDir("/repo/base/deploy.yaml") || !fsys.IsDir("/") {
		t.Errorf("IsDir is wrong")
	}

	if got, err := fsys.ReadDir("/repo/base"); err != nil || !slices.Equal(got, []string{"deploy.yaml", "notes.txt", "sub", "svc.yaml"}) {
		t.Errorf("ReadDir = %q, %v", got, err)
	}
	if _, err := fsys.ReadDir("/repo/base/deploy.yaml"); err == nil {
		t.Errorf("ReadDir of a file succeeded")
	}

	for _, tt := range []struct{ in, dir, file string }{
		{"/repo/base", "/repo/base", ""},
		{"/repo/base/", "/repo/base", ""},
		{"/repo/base/sub/../deploy.yaml", "/repo/base", "deploy.yaml"},
		{"/repo", "/repo", ""},
		{"/overlay", "/overlay", ""},
	} {
		dir, f, err := fsys.CleanedAbs(tt.in)
		if err != nil || string(dir) != tt.dir || f != tt.file {
			t.Errorf("CleanedAbs(%q) = %q, %q, %v; want %q, %q", tt.in, dir, f, err, tt.dir, tt.file)
		}
	}
	if _, _, err := fsys.CleanedAbs("/repo/nothere"); err == nil {
		t.Errorf("CleanedAbs of a missing path succeeded")
	}

	if got, err := fsys.Glob("/repo/base/*.yaml"); err != nil || !slices.Equal(got, []string{"/repo/base/deploy.yaml", "/repo/base/svc.yaml"}) {
		t.Errorf("Glob = %q, %v", got, err)
	}
	if got, err := fsys.Glob("/repo/*/s*"); err != nil || !slices.Equal(got, []string{"/repo/base/sub", "/repo/base/svc.yaml"}) {
		t.Errorf("Glob = %q, %v", got, err)
	}
	if _, err := fsys.Glob("/repo/["); err == nil {
		t.Errorf("Glob with a bad pattern succeeded")
	}

	var walked []string
	err = fsys.Walk("/repo/base", func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		walked = append(walked, p)
		if info.Name() == "sub" {
			return filepath.SkipDir
		}
		return nil
	})
	want := []string{"/repo/base", "/repo/base/deploy.yaml", "/repo/base/notes.txt", "/repo/base/sub", "/repo/base/svc.yaml"}
	if err != nil || !slices.Equal(walked, want) {
		t.Errorf("Walk = %q, %v; want %q", walked, err, want)
	}
}

func TestSnapshotFSMountsAndCharts(t *testing.T) {
	fsys := testFS()
	const id = "0123456789abcdef"
	fsys.mount(id, fstest.MapFS{"web/kustomization.yaml": file("k"), "web/deploy.yaml": file("remote deploy")})
	fsys.helm[helmRoot+"/fedcba9876543210.yaml"] = []byte("rendered")
	var inspected []string
	fsys.inspect = func(name string, data []byte) ([]byte, error) {
		inspected = append(inspected, name)
		return append([]byte("seen "), data...), nil
	}

	if got, err := fsys.ReadDir("/"); err != nil || !slices.Equal(got, []string{"helm", "overlay", "remote", "repo"}) {
		t.Errorf("ReadDir(/) = %q, %v", got, err)
	}
	if got, err := fsys.ReadDir(remoteRoot); err != nil || !slices.Equal(got, []string{id}) {
		t.Errorf("ReadDir(%s) = %q, %v", remoteRoot, got, err)
	}
	if got, err := fsys.ReadDir(helmRoot); err != nil || !slices.Equal(got, []string{"fedcba9876543210.yaml"}) {
		t.Errorf("ReadDir(%s) = %q, %v", helmRoot, got, err)
	}
	if !fsys.IsDir(remoteRoot+"/"+id+"/web") || !fsys.IsDir(helmRoot) || fsys.Exists(remoteRoot+"/ffffffffffffffff") {
		t.Errorf("IsDir or Exists is wrong")
	}

	// Files of snapshots and of the overlay go through inspect; rendered charts do not.
	for p, want := range map[string]string{
		remoteRoot + "/" + id + "/web/../web/deploy.yaml": "seen remote deploy",
		"/repo/base/svc.yaml":                             "seen svc",
		helmRoot + "/fedcba9876543210.yaml":               "rendered",
	} {
		if data, err := fsys.ReadFile(p); err != nil || string(data) != want {
			t.Errorf("ReadFile(%q) = %q, %v; want %q", p, data, err, want)
		}
	}
	if want := []string{remoteRoot + "/" + id + "/web/deploy.yaml", "/repo/base/svc.yaml"}; !slices.Equal(slices.Sorted(slices.Values(inspected)), slices.Sorted(slices.Values(want))) {
		t.Errorf("inspected %q, want %q", inspected, want)
	}
	if data, err := fsys.readSnapshotFile(remoteRoot + "/" + id + "/web/deploy.yaml"); err != nil || string(data) != "remote deploy" {
		t.Errorf("readSnapshotFile = %q, %v", data, err)
	}

	// Remote snapshots and rendered charts are read-only.
	for _, p := range []string{remoteRoot + "/" + id + "/web/new.yaml", remoteRoot + "/x", helmRoot + "/new.yaml"} {
		if err := fsys.WriteFile(p, []byte("x")); !errors.Is(err, errReadOnly) {
			t.Errorf("WriteFile(%q) = %v, want read-only", p, err)
		}
		if err := fsys.MkdirAll(p); !errors.Is(err, errReadOnly) {
			t.Errorf("MkdirAll(%q) = %v, want read-only", p, err)
		}
	}
}
