// Package delta encodes a byte string as its differences from a reference: runs of bytes copied
// from the reference or from what was decoded before, and the bytes found in neither.
//
// The watch caches keep thousands of objects of each resource type as JSON, and objects of one
// type differ in a few values (names, uids, resourceVersions, timestamps) among the same keys
// and mostly the same values. Encoded against one object of the type, a Service of 630 bytes
// takes about 120. Unlike compress/flate with a preset dictionary, a Dictionary is built once
// and encoding needs no state beyond a 16 KiB table on the stack, so a cache can hold one per
// resource type and encode each event without a pool of compressors (about 1 MiB each).
//
// An encoding is the decoded length as a uvarint, then operations, each a uvarint tag:
//
//	tag&1 == 0: a literal; tag>>1 bytes follow.
//	tag&1 == 1: a copy of tag>>1 + MinMatch bytes; a uvarint position follows, in the
//	            reference followed by the bytes decoded so far. A copy may overlap its own
//	            output, which repeats a run.
package delta

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MinMatch is the shortest copy an encoding holds: a shorter one would take more bytes than
// the literal.
const MinMatch = 4

const (
	tableBits = 12
	// maxInitialCap bounds what Decode allocates before it has seen the operations, so that
	// a corrupt length cannot make it reserve gigabytes.
	maxInitialCap = 1 << 20
)

// Dictionary is a reference to encode against, and an index of its four-byte sequences. It is
// immutable once made: any number of goroutines may use it at once.
type Dictionary struct {
	ref []byte
	// table holds, for each hash of four bytes, 1 + the last position in ref where they
	// start; 0 is none.
	table [1 << tableBits]uint32
}

// NewDictionary returns a Dictionary over a copy of ref.
func NewDictionary(ref []byte) *Dictionary {
	d := &Dictionary{ref: append([]byte(nil), ref...)}
	for i := 0; i+MinMatch <= len(d.ref); i++ {
		d.table[hash(d.ref[i:])] = uint32(i + 1)
	}
	return d
}

// Len is the length of the reference.
func (d *Dictionary) Len() int { return len(d.ref) }

func hash(b []byte) uint32 {
	return (binary.LittleEndian.Uint32(b) * 2654435761) >> (32 - tableBits)
}

// Append appends the encoding of src to dst and returns the extended slice.
func (d *Dictionary) Append(dst, src []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(src)))
	table := d.table // positions in the reference, then in src as the encoding moves on
	base := len(d.ref)
	// at is byte v of the reference followed by src, as the decoder will have it.
	at := func(v int) byte {
		if v < base {
			return d.ref[v]
		}
		return src[v-base]
	}
	literal := 0 // where the bytes not yet encoded start
	for i := 0; i+MinMatch <= len(src); {
		h := hash(src[i:])
		candidate := int(table[h]) - 1
		table[h] = uint32(base + i + 1)
		n := 0
		if candidate >= 0 {
			for i+n < len(src) && at(candidate+n) == src[i+n] {
				n++
			}
		}
		if n < MinMatch {
			i++
			continue
		}
		dst = appendLiteral(dst, src[literal:i])
		dst = binary.AppendUvarint(dst, uint64(n-MinMatch)<<1|1)
		dst = binary.AppendUvarint(dst, uint64(candidate))
		for j := i + 1; j < i+n && j+MinMatch <= len(src); j++ {
			table[hash(src[j:])] = uint32(base + j + 1)
		}
		i += n
		literal = i
	}
	return appendLiteral(dst, src[literal:])
}

func appendLiteral(dst, lit []byte) []byte {
	if len(lit) == 0 {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(len(lit))<<1)
	return append(dst, lit...)
}

// ErrCorrupt says an encoding does not decode against the Dictionary.
var ErrCorrupt = errors.New("delta: corrupt encoding")

// Decode returns the bytes enc encodes against d, in a new slice.
func (d *Dictionary) Decode(enc []byte) ([]byte, error) {
	size, k := binary.Uvarint(enc)
	if k <= 0 {
		return nil, fmt.Errorf("%w: no length", ErrCorrupt)
	}
	out := make([]byte, 0, min(size, maxInitialCap))
	base := uint64(len(d.ref))
	for p := k; p < len(enc); {
		tag, k := binary.Uvarint(enc[p:])
		if k <= 0 {
			return nil, fmt.Errorf("%w: bad operation at byte %d", ErrCorrupt, p)
		}
		p += k
		n := tag >> 1
		if tag&1 == 1 {
			n += MinMatch
		}
		if n > size-uint64(len(out)) {
			return nil, fmt.Errorf("%w: operation at byte %d runs past the length %d", ErrCorrupt, p, size)
		}
		if tag&1 == 0 {
			if n > uint64(len(enc)-p) {
				return nil, fmt.Errorf("%w: literal at byte %d runs past the end", ErrCorrupt, p)
			}
			out = append(out, enc[p:p+int(n)]...)
			p += int(n)
			continue
		}
		from, k := binary.Uvarint(enc[p:])
		if k <= 0 || from >= base+uint64(len(out)) {
			return nil, fmt.Errorf("%w: copy at byte %d from outside what is decoded", ErrCorrupt, p)
		}
		p += k
		if from < base && n <= base-from {
			out = append(out, d.ref[from:from+n]...)
			continue
		}
		for v := from; n > 0; v, n = v+1, n-1 { // reaches into the output, possibly the part it writes
			if v < base {
				out = append(out, d.ref[v])
			} else {
				out = append(out, out[v-base])
			}
		}
	}
	if uint64(len(out)) != size {
		return nil, fmt.Errorf("%w: %d bytes decoded, want %d", ErrCorrupt, len(out), size)
	}
	return out, nil
}
