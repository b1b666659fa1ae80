// Package notifytest is a real HTTP endpoint for notification tests, standing for a team's
// webhook or chat.
package notifytest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Receiver answers each request with the next of the statuses it was made with (200 once
// they run out) and keeps every request.
type Receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []Request
}

// Request is one request a Receiver received, and the status it answered.
type Request struct {
	Header http.Header
	Body   []byte
	Status int
}

// NewReceiver starts a Receiver, closed when the test ends.
func NewReceiver(t testing.TB, statuses ...int) *Receiver {
	r := &Receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.got = append(r.got, Request{req.Header.Clone(), body, status})
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

// Requests returns the requests received so far, oldest first.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}
