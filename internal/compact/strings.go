package compact

import "unsafe"

// Strings packs copies of strings one after the other into blocks of StringsBlock bytes, so
// that strings a cache keeps for long, received one by one among the garbage of the work that
// brought them, fill pages of their own instead of each keeping a page of small objects in use.
// A block stays in memory while any string in it does, so strings kept for about as long as
// each other belong in one Strings. The zero value is ready to use; it is not safe for
// concurrent use.
type Strings struct {
	block []byte // the block being filled: strings are appended, never changed
}

// StringsBlock is the size of Strings' blocks.
const StringsBlock = 4 << 10

// Pack returns a copy of s in the current block, starting a new block when it is full.
func (p *Strings) Pack(s string) string {
	if s == "" {
		return s
	}
	if len(p.block)+len(s) > cap(p.block) {
		p.block = make([]byte, 0, max(StringsBlock, len(s)))
	}
	start := len(p.block)
	p.block = append(p.block, s...)
	return unsafe.String(&p.block[start], len(s))
}
