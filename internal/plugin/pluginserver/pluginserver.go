// Package pluginserver is a generator plugin for tests: a real HTTP server that speaks the
// protocol of internal/plugin (and Argo CD's), checks the bearer token as a plugin must, and
// answers what the test sets. It can fail the ways a plugin fails in production: an error
// status, an answer too slow or too large.
//
//	srv := pluginserver.Start("s3cret")
//	defer srv.Close()
//	srv.Answer(func(in map[string]any) []map[string]any { return []map[string]any{{"env": "dev"}} })
package pluginserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Path is where the plugin answers (plugin.Path, repeated so that the package stands alone).
const Path = "/api/v1/getparams.execute"

// Request is a request the server received with the right token.
type Request struct {
	// ApplicationSetName is the request's applicationSetName.
	ApplicationSetName string `json:"applicationSetName"`
	// Input holds the request's input.parameters.
	Input struct {
		Parameters map[string]any `json:"parameters"`
	} `json:"input"`
}

// Server is a running plugin.
type Server struct {
	srv   *httptest.Server
	token string

	mu       sync.Mutex
	answer   func(parameters map[string]any) []map[string]any
	status   int
	delay    time.Duration
	padding  int
	received []Request
	rejected int
}

// Start starts a plugin that accepts only `Authorization: Bearer <token>`. Until Answer is
// called it answers no parameter sets.
func Start(token string) *Server {
	s := &Server{token: token, answer: func(map[string]any) []map[string]any { return []map[string]any{} }}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the plugin's base URL.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server, ending the requests it is holding.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Answer sets the parameter sets answered for a request's input parameters.
func (s *Server) Answer(f func(parameters map[string]any) []map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = f
}

// Fail makes every request answer status with a JSON error body; 0 answers normally again.
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

// Delay makes every answer wait d (or until the client gives up); 0 answers at once.
func (s *Server) Delay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Oversize pads every answer, otherwise valid, beyond size bytes; 0 stops padding.
func (s *Server) Oversize(size int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.padding = size
}

// Received returns the requests received with the right token, in order.
func (s *Server) Received() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.received...)
}

// Rejected is the number of requests refused for a missing or wrong token.
func (s *Server) Rejected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != Path {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		s.rejected++
		s.mu.Unlock()
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "bad token"})
		return
	}
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	s.received = append(s.received, req)
	answer, status, delay, padding := s.answer, s.status, s.delay, s.padding
	s.mu.Unlock()

	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if status != 0 {
		writeJSON(w, status, map[string]string{"message": "the plugin failed on purpose"})
		return
	}
	body := map[string]any{"output": map[string]any{"parameters": answer(req.Input.Parameters)}}
	if padding > 0 {
		body["padding"] = strings.Repeat("x", padding)
	}
	writeJSON(w, http.StatusOK, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
