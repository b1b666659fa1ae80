// Package plugin calls generator plugins, the HTTP services behind plugin generators, with the
// protocol Argo CD defines: the controller POSTs
//
//	{"applicationSetName": "...", "input": {"parameters": {...}}}
//
// to <baseUrl>/api/v1/getparams.execute with `Authorization: Bearer <token>`, and the plugin
// answers {"output": {"parameters": [{...}, ...]}}.
//
// Caller implements generators.PluginCaller for the ApplicationSet controller: each plugin is
// configured by a ConfigMap in the controller's namespace (baseUrl, token, requestTimeout)
// whose token refers to a key of a Secret there. Post is the HTTP exchange alone. Every call is
// bounded in time (DefaultTimeout, or requestTimeout up to MaxTimeout) and in size
// (MaxResponseBytes); errors name the ConfigMap and the Secret, never the token.
package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Path is where a plugin answers, below its baseUrl.
const Path = "/api/v1/getparams.execute"

// The bounds of one call.
const (
	// DefaultTimeout is how long a call may take when the ConfigMap sets no requestTimeout
	// (Argo CD's default).
	DefaultTimeout = 30 * time.Second
	// MaxTimeout caps requestTimeout: a pass waits for its plugins, and holds one of the
	// controller's workers meanwhile.
	MaxTimeout = 5 * time.Minute
	// MaxResponseBytes caps the body of an answer; a larger one fails the call.
	MaxResponseBytes = 10 << 20
)

// Request is what a plugin is sent.
type Request struct {
	// ApplicationSetName names the ApplicationSet the parameters are for.
	ApplicationSetName string `json:"applicationSetName"`
	// Input holds the generator's input.
	Input Input `json:"input"`
}

// Input is the generator's input.
type Input struct {
	// Parameters are the generator's input.parameters; never null on the wire.
	Parameters map[string]any `json:"parameters"`
}

// Endpoint is where a plugin is and how to call it.
type Endpoint struct {
	// BaseURL is the plugin's http or https base URL; Path is appended.
	BaseURL string
	// Token is sent as a bearer token.
	Token string
	// Timeout bounds the call; 0 means DefaultTimeout.
	Timeout time.Duration
}

// response is a plugin's answer. Pointers tell a missing key from an empty one: an answer
// without output.parameters is an error, not "no parameter sets", which would delete every
// generated Application.
type response struct {
	Output *struct {
		Parameters *[]json.RawMessage `json:"parameters"`
	} `json:"output"`
}

// Post sends req to the plugin at e and returns the parameter sets it answered, in order. Any
// answer but a 2xx with a JSON list of objects under output.parameters, within e.Timeout and
// MaxResponseBytes, is an error. The token never appears in an error.
func Post(ctx context.Context, hc *http.Client, e Endpoint, req Request) ([]map[string]any, error) {
	target, err := endpointURL(e.BaseURL)
	if err != nil {
		return nil, err
	}
	if req.Input.Parameters == nil {
		req.Input.Parameters = map[string]any{}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "navarch-applicationset")
	if e.Token != "" {
		hreq.Header.Set("Authorization", "Bearer "+e.Token)
	}
	where := "POST " + target.Redacted()
	resp, err := hc.Do(hreq)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: no answer within %s (requestTimeout)", where, timeout)
		}
		return nil, fmt.Errorf("%s: %w", where, redact(err, e.Token))
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("%s: the answer did not arrive within %s (requestTimeout)", where, timeout)
	case err != nil:
		return nil, fmt.Errorf("%s: read the answer: %w", where, err)
	case len(data) > MaxResponseBytes:
		return nil, fmt.Errorf("%s: the answer is larger than %d MiB", where, MaxResponseBytes>>20)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, fmt.Errorf("%s: %s%s", where, resp.Status, excerpt(data, e.Token))
	}
	sets, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return sets, nil
}

// endpointURL checks baseUrl and appends Path.
func endpointURL(base string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return nil, fmt.Errorf("baseUrl: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("baseUrl: %q is not an http or https URL", u.Redacted())
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + Path
	u.RawPath = ""
	return u, nil
}

// decode reads the parameter sets of an answer.
func decode(data []byte) ([]map[string]any, error) {
	const shape = `{"output": {"parameters": [{...}, ...]}}`
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("the answer is not %s: %w", shape, err)
	}
	if r.Output == nil || r.Output.Parameters == nil {
		return nil, fmt.Errorf("the answer has no output.parameters; a plugin with nothing to generate answers %s", `{"output": {"parameters": []}}`)
	}
	raw := *r.Output.Parameters
	out := make([]map[string]any, len(raw))
	for i, item := range raw {
		if err := json.Unmarshal(item, &out[i]); err != nil || out[i] == nil {
			return nil, fmt.Errorf("output.parameters[%d]: must be an object", i)
		}
	}
	return out, nil
}

// excerpt is the start of an error answer, for the user to see what the plugin said.
func excerpt(data []byte, token string) string {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return ""
	}
	const limit = 256
	if len(s) > limit {
		s = s[:limit]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	if token != "" {
		s = strings.ReplaceAll(s, token, "<token>")
	}
	return ": " + s
}

// redact removes the token from a transport error, in case a proxy or a server echoed it.
func redact(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "<token>"))
}
