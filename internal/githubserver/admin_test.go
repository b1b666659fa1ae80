package githubserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The admin API mints credentials, so it must refuse clients from other
// machines even when the server listens on every interface. A real remote
// client cannot be arranged in a unit test, so this drives the handler with
// the RemoteAddr such a client would have.
func TestAdminAPIServesLoopbackClientsOnly(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	tests := []struct {
		remoteAddr string
		want       int
	}{
		{"127.0.0.1:40000", http.StatusNoContent},
		{"[::1]:40000", http.StatusNoContent},
		{"10.1.2.3:40000", http.StatusForbidden},
		{"[2001:db8::1]:40000", http.StatusForbidden},
		{"192.168.1.1:40000", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.remoteAddr, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/_navarch/tokens", strings.NewReader(`{"token":"t-`+tt.remoteAddr+`"}`))
			req.RemoteAddr = tt.remoteAddr
			rec := httptest.NewRecorder()
			s.http.Handler.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Errorf("status = %d, want %d", rec.Code, tt.want)
			}
			s.mu.Lock()
			_, added := s.tokens["t-"+tt.remoteAddr]
			s.mu.Unlock()
			if added != (tt.want == http.StatusNoContent) {
				t.Errorf("token added = %v, want %v", added, tt.want == http.StatusNoContent)
			}
		})
	}
}
