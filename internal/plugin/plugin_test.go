package plugin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/navarch-io/navarch/internal/plugin/pluginserver"
)

const token = "s3cret-token"

func TestPostReturnsTheParameterSets(t *testing.T) {
	srv := pluginserver.Start(token)
	defer srv.Close()
	srv.Answer(func(in map[string]any) []map[string]any {
		return []map[string]any{{"env": "dev", "team": in["team"]}, {"env": "prod", "n": 3}}
	})
	e := Endpoint{BaseURL: srv.URL() + "/", Token: token}
	got, err := Post(context.Background(), http.DefaultClient, e, Request{ApplicationSetName: "web", Input: Input{Parameters: map[string]any{"team": "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"env": "dev", "team": "a"}, {"env": "prod", "n": float64(3)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	recv := srv.Received()
	if len(recv) != 1 || recv[0].ApplicationSetName != "web" || recv[0].Input.Parameters["team"] != "a" {
		t.Errorf("the plugin received %+v", recv)
	}

	// No parameters still send an object, as plugins written for Argo CD read it.
	if _, err := Post(context.Background(), http.DefaultClient, e, Request{ApplicationSetName: "web"}); err != nil {
		t.Fatal(err)
	}
	if p := srv.Received()[1].Input.Parameters; p == nil {
		t.Errorf("input.parameters was sent as null")
	}
}

func TestPostFailures(t *testing.T) {
	srv := pluginserver.Start(token)
	defer srv.Close()
	raw := func(status int, body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	tests := []struct {
		name    string
		setup   func()
		e       Endpoint
		wantErr string
	}{
		{"a wrong token", func() {}, Endpoint{BaseURL: srv.URL(), Token: "wrong"}, "403 Forbidden"},
		{"a server error", func() { srv.Fail(http.StatusInternalServerError) }, Endpoint{BaseURL: srv.URL(), Token: token},
			"POST " + srv.URL() + Path + ": 500 Internal Server Error: {\"message\":\"the plugin failed on purpose\"}"},
		{"too slow", func() { srv.Delay(time.Minute) }, Endpoint{BaseURL: srv.URL(), Token: token, Timeout: 200 * time.Millisecond},
			"no answer within 200ms (requestTimeout)"},
		{"too large", func() { srv.Oversize(MaxResponseBytes) }, Endpoint{BaseURL: srv.URL(), Token: token}, "the answer is larger than 10 MiB"},
		{"not JSON", func() {}, Endpoint{BaseURL: raw(200, "<html>")}, `the answer is not {"output": {"parameters": [{...}, ...]}}`},
		{"no output", func() {}, Endpoint{BaseURL: raw(200, `{}`)}, "the answer has no output.parameters"},
		{"a set that is not an object", func() {}, Endpoint{BaseURL: raw(200, `{"output":{"parameters":[{"a":1},"b"]}}`)}, "output.parameters[1]: must be an object"},
		{"a null set", func() {}, Endpoint{BaseURL: raw(200, `{"output":{"parameters":[null]}}`)}, "output.parameters[0]: must be an object"},
		{"an echoed token", func() {}, Endpoint{BaseURL: raw(401, "bad token "+token), Token: token}, "401 Unauthorized: bad token <token>"},
		{"not http", func() {}, Endpoint{BaseURL: "ftp://plugin"}, `baseUrl: "ftp://plugin" is not an http or https URL`},
		{"no host", func() {}, Endpoint{BaseURL: "http://"}, "is not an http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.Fail(0)
			srv.Delay(0)
			srv.Oversize(0)
			tt.setup()
			got, err := Post(context.Background(), http.DefaultClient, tt.e, Request{ApplicationSetName: "web"})
			if err == nil {
				t.Fatalf("no error (got %v), want one containing %q", got, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("the error reveals the token: %v", err)
			}
		})
	}
	srv.Delay(0)
}

func TestAnEmptyAnswerIsNoParameterSets(t *testing.T) {
	srv := pluginserver.Start(token)
	defer srv.Close()
	got, err := Post(context.Background(), http.DefaultClient, Endpoint{BaseURL: srv.URL(), Token: token}, Request{})
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("got %v, %v; want an empty list and no error", got, err)
	}
}

func TestParseTokenRef(t *testing.T) {
	tests := []struct {
		ref, secret, key, wantErr string
	}{
		{ref: "$plugin.myplugin.token", secret: DefaultSecret, key: "plugin.myplugin.token"},
		{ref: "$my-plugin:token", secret: "my-plugin", key: "token"},
		{ref: " $my-plugin:plugin.x.token\n", secret: "my-plugin", key: "plugin.x.token"},
		{ref: "", wantErr: "must be set"},
		{ref: "s3cret", wantErr: "a token is never written in a ConfigMap"},
		{ref: "$", wantErr: "is not $<key> or $<secret>:<key>"},
		{ref: "$:key", wantErr: "is not $<key> or $<secret>:<key>"},
		{ref: "$secret:", wantErr: "is not $<key> or $<secret>:<key>"},
		{ref: "$a:b:c", wantErr: "is not $<key> or $<secret>:<key>"},
	}
	for _, tt := range tests {
		secret, key, err := ParseTokenRef(tt.ref)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseTokenRef(%q): error %v, want one containing %q", tt.ref, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || secret != tt.secret || key != tt.key):
			t.Errorf("ParseTokenRef(%q) = %q, %q, %v; want %q, %q", tt.ref, secret, key, err, tt.secret, tt.key)
		}
	}
}

func TestParseTimeout(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"", DefaultTimeout, ""},
		{"45", 45 * time.Second, ""},
		{"1m30s", 90 * time.Second, ""},
		{"300", MaxTimeout, ""},
		{"301", 0, "longer than the maximum"},
		{"99999999999999999", 0, "longer than the maximum"},
		{"0", 0, "must be positive"},
		{"-5s", 0, "must be positive"},
		{"soon", 0, "neither seconds nor a duration"},
	}
	for _, tt := range tests {
		got, err := ParseTimeout(tt.in)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseTimeout(%q): error %v, want one containing %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}
