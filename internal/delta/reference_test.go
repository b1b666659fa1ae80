package delta

import (
	"bytes"
	"sync"
	"testing"
)

func TestAReferenceIsTheFirstValueItMet(t *testing.T) {
	var r Reference
	if r.Dictionary() != nil {
		t.Fatal("a new Reference has a Dictionary")
	}
	first, second := service(1, 1), service(2, 2)
	d := r.For(first)
	if r.For(second) != d || r.Dictionary() != d {
		t.Fatal("a second value made another Dictionary")
	}
	if !bytes.Equal(d.ref, first) {
		t.Errorf("the reference is %q; want the first value", d.ref)
	}
	// Every caller encodes against the same reference, so any of them decodes the others.
	got, err := r.Dictionary().Decode(d.Append(nil, second))
	if err != nil || !bytes.Equal(got, second) {
		t.Errorf("Decode = %q, %v; want the second value", got, err)
	}
}

func TestAReferenceKeepsAtMostMaxReferenceBytes(t *testing.T) {
	var r Reference
	big := bytes.Repeat([]byte("0123456789abcdef"), MaxReference/8)
	if n := r.For(big).Len(); n != MaxReference {
		t.Errorf("reference of %d bytes from a value of %d; want %d", n, len(big), MaxReference)
	}
}

func TestConcurrentFirstValuesAgreeOnOneDictionary(t *testing.T) {
	var r Reference
	got := make([]*Dictionary, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = r.For(service(i, i)) })
	}
	wg.Wait()
	for i, d := range got {
		if d != got[0] {
			t.Fatalf("caller %d got Dictionary %p, caller 0 %p", i, d, got[0])
		}
	}
}
