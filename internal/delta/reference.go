package delta

import "sync/atomic"

// MaxReference bounds the reference a Reference keeps. A first value larger than this (a
// ConfigMap holding a file) would cost memory for the cache's lifetime while helping few
// others.
const MaxReference = 8 << 10

// Reference is the Dictionary of a cache whose values are all encoded against the first one
// it met: values of one kind share their keys and most values, so any of them makes a good
// reference. It is safe for concurrent use; the zero value has no Dictionary yet.
type Reference struct {
	dict atomic.Pointer[Dictionary]
}

// For returns the Dictionary, made from the first MaxReference bytes of src if there was
// none. Every caller gets the same Dictionary, whichever value came first.
func (r *Reference) For(src []byte) *Dictionary {
	if d := r.dict.Load(); d != nil {
		return d
	}
	r.dict.CompareAndSwap(nil, NewDictionary(src[:min(len(src), MaxReference)]))
	return r.dict.Load()
}

// Dictionary returns the Dictionary, or nil before the first call of For.
func (r *Reference) Dictionary() *Dictionary { return r.dict.Load() }
