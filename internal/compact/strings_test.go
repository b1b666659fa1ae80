package compact

import (
	stdstrings "strings"
	"testing"
	"unsafe"
)

func TestStringsArePackedOneAfterTheOther(t *testing.T) {
	var p Strings
	a, b := p.Pack(stdstrings.Clone("fleet")), p.Pack(stdstrings.Clone("c024-a030"))
	if a != "fleet" || b != "c024-a030" {
		t.Fatalf("packed %q and %q, want fleet and c024-a030", a, b)
	}
	if unsafe.Add(unsafe.Pointer(unsafe.StringData(a)), len(a)) != unsafe.Pointer(unsafe.StringData(b)) {
		t.Error("two strings packed in a row are not adjacent")
	}
	if p.Pack("") != "" {
		t.Error("an empty string packs as a non-empty one")
	}
	// A string that does not fit in the block starts a new one; one larger than a block gets a
	// block of its own.
	rest := stdstrings.Repeat("x", StringsBlock-len(a)-len(b))
	p.Pack(rest)
	c := p.Pack("next")
	if c != "next" || unsafe.Pointer(unsafe.StringData(c)) == unsafe.Add(unsafe.Pointer(unsafe.StringData(b)), len(b)+len(rest)) {
		t.Errorf("a string packed into a full block: %q", c)
	}
	huge := stdstrings.Repeat("y", 2*StringsBlock)
	if got := p.Pack(huge); got != huge {
		t.Error("a string larger than a block is not packed whole")
	}
}
