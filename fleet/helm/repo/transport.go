package repo

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxRedirects is how many redirects one request follows, as net/http does
// by default.
const maxRedirects = 10

// defaultHTTPClient is used when Options.HTTPClient is nil. The overall
// timeout bounds a whole download, headers and body.
func defaultHTTPClient() *http.Client {
	return &http.Client{
		Timeout: 5 * time.Minute,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   8,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: time.Minute,
			ExpectContinueTimeout: time.Second,
		},
	}
}

// origin is a URL's scheme and host with the default port made explicit:
// the unit credentials are scoped to.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// transportFor returns the transport to talk to a repository with creds:
// the shared one, or, when creds carry TLS material, one of its clones
// configured with it (kept, so connections are reused across calls).
func (c *Client) transportFor(creds *Credentials) (http.RoundTripper, error) {
	if creds == nil || (len(creds.CertData) == 0 && len(creds.KeyData) == 0 && len(creds.CAData) == 0) {
		return c.base.Transport, nil
	}
	h := sha256.New()
	for _, b := range [][]byte{creds.CertData, creds.KeyData, creds.CAData} {
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	key := hex.EncodeToString(h.Sum(nil))

	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.tlsTransports[key]; ok {
		return t, nil
	}
	base, ok := c.base.Transport.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("%w: TLS settings need an *http.Transport in Options.HTTPClient, have %T", ErrInvalidCredentials, c.base.Transport)
	}
	cfg, err := tlsConfig(base.TLSClientConfig, creds)
	if err != nil {
		return nil, err
	}
	t := base.Clone()
	t.TLSClientConfig = cfg
	c.tlsTransports[key] = t
	return t, nil
}

// tlsConfig adds creds' client certificate and CA bundle to base.
func tlsConfig(base *tls.Config, creds *Credentials) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if base != nil {
		cfg = base.Clone()
	}
	if len(creds.CertData) > 0 || len(creds.KeyData) > 0 {
		cert, err := tls.X509KeyPair(creds.CertData, creds.KeyData)
		if err != nil {
			// The parse error describes the PEM, never its content.
			return nil, fmt.Errorf("%w: TLS client certificate: %w", ErrInvalidCredentials, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if len(creds.CAData) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(creds.CAData) {
			return nil, fmt.Errorf("%w: CA bundle holds no PEM certificate", ErrInvalidCredentials)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// httpClient returns a client for one operation against a repository whose
// own origin is repoOrigin. It attaches creds' basic or bearer credentials
// to requests for that origin only (any origin if creds.PassCredentials),
// and follows redirects without carrying an Authorization header to another
// origin.
func (c *Client) httpClient(creds *Credentials, repoOrigin string) (*http.Client, error) {
	t, err := c.transportFor(creds)
	if err != nil {
		return nil, err
	}
	if creds != nil && (creds.Username != "" || creds.BearerToken != "") {
		t = &authTransport{next: t, creds: creds, origin: repoOrigin}
	}
	return &http.Client{
		Transport:     t,
		Timeout:       c.base.Timeout,
		CheckRedirect: checkRedirect(creds != nil && creds.PassCredentials),
	}, nil
}

// checkRedirect stops after maxRedirects and drops Authorization when a
// redirect leaves the origin of the previous request (net/http keeps it
// for another port of the same host). With pass, credentials follow.
func checkRedirect(pass bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if !pass && origin(via[len(via)-1].URL) != origin(req.URL) {
			req.Header.Del("Authorization")
		}
		return nil
	}
}

// authTransport adds credentials to requests for one origin.
type authTransport struct {
	next   http.RoundTripper
	creds  *Credentials
	origin string
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" || (!t.creds.PassCredentials && origin(req.URL) != t.origin) {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	if t.creds.Username != "" {
		req.SetBasicAuth(t.creds.Username, t.creds.Password)
	} else {
		req.Header.Set("Authorization", "Bearer "+t.creds.BearerToken)
	}
	return t.next.RoundTrip(req)
}

// operationTransport ties the requests of a library that makes its own
// (Helm's registry client uses context.Background()) to the operation's
// context, and caps every response body at maxBody bytes.
type operationTransport struct {
	ctx     context.Context
	next    http.RoundTripper
	maxBody int64
}

func (t *operationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// Keep the request's own context (it carries the http.Client timeout)
	// and cancel it also when the operation's context ends.
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(t.ctx, func() { cancel(context.Cause(t.ctx)) })
	release := func() {
		stop()
		cancel(nil)
	}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		release()
		return nil, err
	}
	if resp.ContentLength > t.maxBody {
		resp.Body.Close()
		release()
		return nil, fmt.Errorf("%w: %s answers %d bytes, more than the %d accepted", ErrTooLarge, redact(req.URL.String()), resp.ContentLength, t.maxBody)
	}
	resp.Body = &cappedBody{body: resp.Body, max: t.maxBody, left: t.maxBody, release: release}
	return resp, nil
}

// cappedBody fails a read that goes past the cap, and releases the
// request's context when closed.
type cappedBody struct {
	body      io.ReadCloser
	max, left int64
	release   func()
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the cap from a longer one.
		var one [1]byte
		n, err := b.body.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: response body exceeds %d bytes", ErrTooLarge, b.max)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error {
	err := b.body.Close()
	b.release()
	return err
}

// readCapped reads r up to limit bytes, failing with ErrTooLarge past it.
func readCapped(r io.Reader, limit int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s exceeds %d bytes", ErrTooLarge, what, limit)
	}
	return data, nil
}
