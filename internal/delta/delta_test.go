package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"
)

// service is a Service as a watch cache keeps it: element e of Cluster c of the fleet benchmark.
func service(e, c int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Service","metadata":{"annotations":{"navarch.io/tracking-id":`+
		`"fleet-apps_e%03[1]d-c%03[2]d:/Service:c%03[2]d-e%03[1]d/web"},"creationTimestamp":"2026-12-04T05:%02[1]d:%02[3]dZ",`+
		`"labels":{"navarch.io/managed":"true"},"name":"web","namespace":"c%03[2]d-e%03[1]d","resourceVersion":"%[4]d",`+
		`"uid":"%08[5]x-%04[6]x-4%03[7]x-9%03[8]x-%012[9]x"},"spec":{"clusterIP":"10.96.%[1]d.%[2]d","clusterIPs":["10.96.%[1]d.%[2]d"],`+
		`"internalTrafficPolicy":"Cluster","ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","ports":[{"port":80,"protocol":"TCP",`+
		`"targetPort":80}],"selector":{"app":"web"},"sessionAffinity":"None","type":"ClusterIP"},"status":{"loadBalancer":{}}}`,
		e, c, (e*7+c)%60, 500000+e*131+c, e*2654435761+c, c*40503, e*17%4096, c*29%4096, uint64(e*c)*0x9e3779b97f4a7c15%(1<<48))
}

func roundTrip(t *testing.T, d *Dictionary, src []byte) []byte {
	t.Helper()
	enc := d.Append(nil, src)
	got, err := d.Decode(enc)
	if err != nil {
		t.Fatalf("decode %q: %v", src, err)
	}
	if !bytes.Equal(got, src) {
		t.Fatalf("decoded %q, want %q", got, src)
	}
	return enc
}

// Whatever the reference, an encoding decodes to what was encoded: empty input, input shorter
// than a copy, input equal to the reference, runs that copy their own output, and an empty
// reference.
func TestEveryEncodingDecodesToItsInput(t *testing.T) {
	ref := service(0, 0)
	for _, d := range []*Dictionary{NewDictionary(ref), NewDictionary(nil)} {
		for _, src := range [][]byte{
			nil, []byte("a"), []byte("abc"), []byte("abcd"), ref, service(3, 7),
			bytes.Repeat([]byte("x"), 1000), bytes.Repeat([]byte("abcde"), 300),
			append(append([]byte("prefix "), ref...), ref[:100]...),
		} {
			roundTrip(t, d, src)
		}
	}
}

// The point of the package: an object of a type encodes in a fraction of its size against
// another of the type, and the reference itself in a few bytes.
func TestAnObjectTakesAFractionOfItsSizeAgainstAnotherOfItsType(t *testing.T) {
	d := NewDictionary(service(0, 0))
	if enc := roundTrip(t, d, service(0, 0)); len(enc) > 8 {
		t.Errorf("the reference encodes in %d bytes, want at most 8", len(enc))
	}
	raw, packed := 0, 0
	for c := range 10 {
		for e := 1; e < 100; e++ {
			src := service(e, c)
			raw += len(src)
			packed += len(roundTrip(t, d, src))
		}
	}
	if packed*3 > raw {
		t.Errorf("990 Services take %d bytes encoded for %d bytes of JSON: want less than a third", packed, raw)
	}
}

// A Dictionary keeps its own copy of the reference: the caller may reuse the slice it gave.
func TestADictionaryKeepsItsOwnReference(t *testing.T) {
	ref := service(1, 1)
	d := NewDictionary(ref)
	src := service(2, 2)
	enc := d.Append(nil, src)
	for i := range ref {
		ref[i] = 'z'
	}
	if got, err := d.Decode(enc); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("after the caller overwrote the reference: %q, %v", got, err)
	}
}

// Damaged encodings are refused with ErrCorrupt, never decoded to something else or a panic.
func TestDamagedEncodingsAreRefused(t *testing.T) {
	d := NewDictionary([]byte("0123456789"))
	good := d.Append(nil, []byte("0123456789 and 0123456789"))
	damaged := map[string][]byte{
		"empty":              nil,
		"length only, short": binary.AppendUvarint(nil, 5),
		"truncated":          good[:len(good)-2],
		"extra bytes":        append(append([]byte(nil), good...), 0x02, 'x'),
		"literal past end":   append(binary.AppendUvarint(nil, 4), 0x08, 'a'),
		"copy from beyond":   append(binary.AppendUvarint(nil, 4), 0x01, 11),
		"copy past length":   append(binary.AppendUvarint(nil, 4), 0x03, 0),
		"length too short":   append(binary.AppendUvarint(nil, 2), 0x01, 0),
		"huge length":        append(binary.AppendUvarint(nil, 1<<62), 0x01, 0),
		"copy of no output":  append(binary.AppendUvarint(nil, 4), 0x01, 10),
	}
	for name, enc := range damaged {
		if got, err := d.Decode(enc); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decoded %q, %v; want ErrCorrupt", name, got, err)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add(service(0, 0), service(5, 5))
	f.Add([]byte{}, []byte("aaaaaaaaaaaaaaaa"))
	f.Add([]byte("abcd"), []byte("abcdabcdabcd"))
	f.Fuzz(func(t *testing.T, ref, src []byte) {
		d := NewDictionary(ref)
		roundTrip(t, d, src)
		// Whatever bytes it is handed, Decode returns the input of an encoding or an error.
		if size, k := binary.Uvarint(src); k > 0 && size <= 1<<16 {
			_, _ = d.Decode(src)
		}
	})
}

// BenchmarkService encodes and decodes the Services of 10 Clusters against the first one, and
// reports the bytes each takes as JSON and encoded.
func BenchmarkService(b *testing.B) {
	var docs [][]byte
	for c := range 10 {
		for e := range 100 {
			docs = append(docs, service(e, c))
		}
	}
	d := NewDictionary(docs[0])
	var raw, packed int
	var encoding, decoding time.Duration
	for b.Loop() {
		raw, packed, encoding, decoding = 0, 0, 0, 0
		for _, doc := range docs {
			start := time.Now()
			enc := d.Append(nil, doc)
			encoding += time.Since(start)
			start = time.Now()
			if _, err := d.Decode(enc); err != nil {
				b.Fatal(err)
			}
			decoding += time.Since(start)
			raw, packed = raw+len(doc), packed+len(enc)
		}
	}
	n := float64(len(docs))
	b.ReportMetric(float64(raw)/n, "json-B/object")
	b.ReportMetric(float64(packed)/n, "encoded-B/object")
	b.ReportMetric(float64(encoding.Nanoseconds())/n, "encode-ns/object")
	b.ReportMetric(float64(decoding.Nanoseconds())/n, "decode-ns/object")
}
