// Command heapspans reads a Go heap dump (runtime/debug.WriteHeapDump) and prints, for each
// small-object size class, the objects alive in it and the spans (the runtime's pages of one
// size class) that hold them. A span is in use, and counted in the heap in use, while a single
// object in it lives, so a size class whose spans hold few objects each is where the heap in use
// exceeds what is allocated: bench/RESULTS.md ("Twentieth session") shows how it is used.
//
//	heapspans heap.dump
package main

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: heapspans HEAPDUMP")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s, err := read(bufio.NewReaderSize(f, 1<<20))
	_ = f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "heapspans:", err)
		os.Exit(1)
	}
	s.print(os.Stdout)
}

// The runtime's small size classes (internal/runtime/gc/sizeclasses.go): the size of their
// objects and the pages of 8 KiB in each of their spans.
var (
	classSizes = []uint64{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}
	classPages = []uint64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 2, 1, 2, 1, 3, 2, 3, 1, 3, 2, 3, 4, 5, 6, 1, 7, 6, 5, 4, 3, 5, 7, 2, 9, 7, 5, 8, 3, 10, 7, 4}
)

const pageBytes = 8192

// class is what a dump holds of one size class.
type class struct {
	size, pages  uint64
	objects      uint64
	spans        uint64
	spansByCount map[uint64]uint64 // spans by the number of live objects in them
}

func (c *class) spanBytes() uint64 { return c.spans * c.pages * pageBytes }

// summary is a dump's small-object classes, and its large objects (each its own span).
type summary struct {
	classes                  map[uint64]*class
	largeObjects, largeBytes uint64
	heapAlloc, heapInuse     uint64 // from the dump's MemStats record
}

// The heap dump's record tags (runtime/heapdump.go).
const (
	tagEOF = iota
	tagObject
	tagOtherRoot
	tagType
	tagGoroutine
	tagStackFrame
	tagParams
	tagFinalizer
	tagItab
	tagOSThread
	tagMemStats
	tagQueuedFinalizer
	tagData
	tagBSS
	tagDefer
	tagPanic
	tagMemProf
	tagAllocSample
)

const dumpHeader = "go1.7 heap dump\n"

// read reads a heap dump. The runtime writes the live objects span by span, in ascending
// addresses within a span, so a span ends where the size changes, the address goes down, or
// the address leaves the span's pages.
func read(br *bufio.Reader) (*summary, error) {
	r := &reader{br: br}
	hdr := make([]byte, len(dumpHeader))
	if _, err := io.ReadFull(br, hdr); err != nil || string(hdr) != dumpHeader {
		return nil, errors.New("not a Go heap dump")
	}
	s := &summary{classes: map[uint64]*class{}}
	var (
		cur             *class
		inSpan          uint64 // live objects seen in the current span
		spanStart, last uint64
	)
	endSpan := func() {
		if cur != nil && inSpan > 0 {
			cur.spans++
			cur.spansByCount[inSpan]++
		}
		cur, inSpan = nil, 0
	}
	for r.err == nil {
		switch tag := r.uint(); tag {
		case tagEOF:
			endSpan()
			return s, nil
		case tagObject:
			addr, size := r.uint(), r.uint()
			r.skip(size)
			r.fields()
			i := slices.Index(classSizes, size)
			if i < 0 {
				endSpan()
				s.largeObjects++
				s.largeBytes += size
				continue
			}
			c := s.classes[size]
			if c == nil {
				c = &class{size: size, pages: classPages[i], spansByCount: map[uint64]uint64{}}
				s.classes[size] = c
			}
			same := cur == c && addr > last
			if same && c.pages == 1 {
				same = addr/pageBytes == spanStart/pageBytes
			} else if same {
				same = addr-spanStart < c.pages*pageBytes
			}
			if !same {
				endSpan()
				cur, spanStart = c, addr
			}
			last = addr
			inSpan++
			c.objects++
		case tagOtherRoot:
			r.skipString()
			r.uint()
		case tagType:
			r.uints(2)
			r.skipString()
			r.uint()
		case tagGoroutine:
			endSpan()
			r.uints(8)
			r.skipString()
			r.uints(4)
		case tagStackFrame:
			r.uints(3)
			r.skipString()
			r.uints(3)
			r.skipString()
			r.fields()
		case tagParams:
			r.uints(4)
			r.skipString()
			r.skipString()
			r.uint()
		case tagFinalizer, tagQueuedFinalizer:
			r.uints(5)
		case tagItab:
			r.uints(2)
		case tagOSThread:
			r.uints(3)
		case tagMemStats:
			stats := make([]uint64, 24+256+1)
			for i := range stats {
				stats[i] = r.uint()
			}
			s.heapAlloc, s.heapInuse = stats[6], stats[9]
		case tagData, tagBSS:
			r.uint()
			r.skipString()
			r.fields()
		case tagDefer:
			r.uints(7)
		case tagPanic:
			r.uints(6)
		case tagMemProf:
			r.uints(2)
			for range r.uint() {
				r.skipString()
				r.skipString()
				r.uint()
			}
			r.uints(2)
		case tagAllocSample:
			r.uints(2)
		default:
			return nil, fmt.Errorf("unknown record tag %d", tag)
		}
	}
	return nil, r.err
}

// reader reads the dump's varints and strings, keeping the first error.
type reader struct {
	br  *bufio.Reader
	err error
}

func (r *reader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(r.br)
	if err != nil {
		r.err = fmt.Errorf("truncated dump: %w", err)
	}
	return v
}

func (r *reader) uints(n int) {
	for range n {
		r.uint()
	}
}

func (r *reader) skip(n uint64) {
	if r.err != nil {
		return
	}
	if _, err := r.br.Discard(int(n)); err != nil {
		r.err = fmt.Errorf("truncated dump: %w", err)
	}
}

func (r *reader) skipString() { r.skip(r.uint()) }

// fields skips a list of pointer fields, which ends with kind 0.
func (r *reader) fields() {
	for r.err == nil && r.uint() != 0 {
		r.uint()
	}
}

// print writes the classes, those holding the most span bytes first.
func (s *summary) print(w io.Writer) {
	classes := slices.Collect(maps.Values(s.classes))
	slices.SortFunc(classes, func(a, b *class) int { return cmp.Compare(b.spanBytes(), a.spanBytes()) })
	fmt.Fprintf(w, "%6s %9s %9s %6s %9s %6s %9s  %s\n", "size", "objects", "live KB", "spans", "spans KB", "full", "unused KB", "spans holding 1, 2, 3, 4 objects")
	var live, spans uint64
	for _, c := range classes {
		b := c.objects * c.size
		live += b
		spans += c.spanBytes()
		fmt.Fprintf(w, "%6d %9d %9d %6d %9d %5.0f%% %9d  %d, %d, %d, %d\n", c.size, c.objects, b>>10, c.spans, c.spanBytes()>>10,
			100*float64(b)/float64(c.spanBytes()), (c.spanBytes()-b)>>10, c.spansByCount[1], c.spansByCount[2], c.spansByCount[3], c.spansByCount[4])
	}
	fmt.Fprintf(w, "small objects: %d KB live in %d KB of spans (%.0f%% full, %d KB unused); large objects: %d, %d KB\n",
		live>>10, spans>>10, 100*float64(live)/float64(spans), (spans-live)>>10, s.largeObjects, s.largeBytes>>10)
	if s.heapInuse > 0 {
		fmt.Fprintf(w, "the runtime's own count: heap allocated %d KB, in use %d KB\n", s.heapAlloc>>10, s.heapInuse>>10)
	}
}
