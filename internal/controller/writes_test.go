package controller

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// controllerWrites counts the API writes the controller under test makes, per resource, and
// its Secret LISTs, so tests and benchmarks assert on requests rather than on timing.
var controllerWrites = &writeCounter{}

type writeCounter struct {
	applications, applicationSets atomic.Int64
	// secretLists counts LISTs of Secrets (not watches).
	secretLists atomic.Int64
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/secrets") && req.URL.Query().Get("watch") != "true" {
			w.secretLists.Add(1)
		}
		if req.Method != http.MethodGet {
			switch {
			case strings.Contains(req.URL.Path, "/applicationsets"):
				w.applicationSets.Add(1)
			case strings.Contains(req.URL.Path, "/applications"):
				w.applications.Add(1)
			}
		}
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
