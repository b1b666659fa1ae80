package main

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// sparse holds every seventh of many 1152-byte objects, which the runtime puts seven to a span,
// so about one object lives in each of their spans.
var (
	sparse []*[1152]byte
	sink   *[1152]byte // makes every object escape to the heap
)

func TestReadOwnHeapDump(t *testing.T) {
	const n = 7 * 2000
	sparse = nil
	runtime.GC() // frees the spans of a previous run's objects (go test -count)
	// No collection while they are allocated: it would free the garbage's slots for the
	// objects allocated after it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for i := range n {
		p := new([1152]byte)
		sink = p
		if i%7 == 0 {
			sparse = append(sparse, p)
		}
	}
	runtime.GC()
	path := filepath.Join(t.TempDir(), "heap.dump")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	debug.WriteHeapDump(f.Fd())
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(sparse)

	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	s, err := read(bufio.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	c := s.classes[1152]
	if c == nil || c.objects < n/7 {
		t.Fatalf("1152-byte class: %+v, want at least %d objects", c, n/7)
	}
	if lone := c.spansByCount[1]; lone < n/7*9/10 {
		t.Errorf("1152-byte class: %d spans hold one object, want about %d (%d spans, %d objects)", lone, n/7, c.spans, c.objects)
	}
	var spans uint64
	for _, c := range s.classes {
		spans += c.spanBytes()
	}
	// The spans found and the large objects are the heap in use, but for spans a processor
	// holds with no live object yet.
	if got := spans + s.largeBytes; got > s.heapInuse || got < s.heapInuse*95/100 {
		t.Errorf("spans found %d bytes and large objects %d, the runtime's heap in use is %d", spans, s.largeBytes, s.heapInuse)
	}

	var out strings.Builder
	s.print(&out)
	if !strings.Contains(out.String(), "small objects:") || !strings.Contains(out.String(), "\n  1152 ") {
		t.Errorf("report lacks the totals or the 1152-byte class:\n%s", out.String())
	}
}

func TestReadRejectsOtherFiles(t *testing.T) {
	if _, err := read(bufio.NewReader(strings.NewReader("not a dump at all"))); err == nil {
		t.Error("read accepted a file that is not a heap dump")
	}
	if _, err := read(bufio.NewReader(strings.NewReader(dumpHeader + "\x01"))); err == nil {
		t.Error("read accepted a truncated dump")
	}
}
