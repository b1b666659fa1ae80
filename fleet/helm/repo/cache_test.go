package repo

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func archive(content string) *Chart {
	data := []byte(content)
	return &Chart{Name: "web", Version: "1.0.0", Digest: sha256Digest(data), Archive: data}
}

func TestArchiveCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newArchiveCache("", 10)
	a, b, d := chartKey{"r", "a", "1.0.0"}, chartKey{"r", "b", "1.0.0"}, chartKey{"r", "d", "1.0.0"}
	for k, content := range map[chartKey]string{a: "aaaa", b: "bbbb"} {
		if err := c.put(k, archive(content)); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := c.get(a); !ok { // a is now the most recently used
		t.Fatal("a is not cached")
	}
	if err := c.put(d, archive("dddd")); err != nil { // 12 bytes > 10: b goes
		t.Fatal(err)
	}
	for k, want := range map[chartKey]bool{a: true, b: false, d: true} {
		if _, ok := c.get(k); ok != want {
			t.Errorf("cached(%s) = %v, want %v", k.chart, ok, want)
		}
	}
	if err := c.put(chartKey{"r", "huge", "1.0.0"}, archive(strings.Repeat("x", 11))); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.get(chartKey{"r", "huge", "1.0.0"}); ok {
		t.Error("an archive larger than the whole cache was kept in memory")
	}
	if c.size > c.maxBytes {
		t.Errorf("memory cache holds %d bytes, more than its %d", c.size, c.maxBytes)
	}
}

func TestArchiveCacheOnDisk(t *testing.T) {
	dir := t.TempDir()
	k := chartKey{"https://charts.example.com", "web", "1.0.0"}
	want := archive("chart bytes")
	if err := newArchiveCache(dir, 1<<20).put(k, want); err != nil {
		t.Fatal(err)
	}

	got, ok := newArchiveCache(dir, 1<<20).get(k)
	if !ok || got.Digest != want.Digest || !bytes.Equal(got.Archive, want.Archive) || got.Name != "web" || got.Version != "1.0.0" {
		t.Fatalf("a new cache on the same directory found %+v, %v; want the archive", got, ok)
	}
	if _, ok := newArchiveCache(dir, 1<<20).get(chartKey{"https://charts.example.com", "web", "1.0.1"}); ok {
		t.Error("another version was found")
	}

	// A damaged file is a miss, not a bad chart.
	path := filepath.Join(dir, "sha256", strings.TrimPrefix(want.Digest, "sha256:")+".tgz")
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := newArchiveCache(dir, 1<<20).get(k); ok {
		t.Error("a damaged archive on disk was served")
	}
}
