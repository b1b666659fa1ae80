package repo_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navarch-io/navarch/fleet/helm/repo"
	"github.com/navarch-io/navarch/internal/chartserver"
)

func TestCredentials(t *testing.T) {
	cases := []struct {
		name   string
		server chartserver.Auth
		creds  repo.Credentials
		want   error
	}{
		{name: "basic auth", server: chartserver.Auth{Username: "alice", Password: "s3cret"}, creds: repo.Credentials{Username: "alice", Password: "s3cret"}},
		{name: "wrong password", server: chartserver.Auth{Username: "alice", Password: "s3cret"}, creds: repo.Credentials{Username: "alice", Password: "hunter2"}, want: repo.ErrUnauthorized},
		{name: "anonymous", server: chartserver.Auth{Username: "alice", Password: "s3cret"}, want: repo.ErrUnauthorized},
		{name: "bearer token", server: chartserver.Auth{BearerToken: "t0ken"}, creds: repo.Credentials{BearerToken: "t0ken"}},
		{name: "wrong bearer token", server: chartserver.Auth{BearerToken: "t0ken"}, creds: repo.Credentials{BearerToken: "hunter2"}, want: repo.ErrUnauthorized},
	}
	for _, start := range []func(*testing.T, chartserver.Auth) *backend{startHTTPBackend, startOCIBackend} {
		for _, tc := range cases {
			b := start(t, tc.server)
			t.Run(b.kind+"/"+tc.name, func(t *testing.T) {
				want := b.publish(t, "web", "1.0.0")
				creds := tc.creds
				creds.PlainHTTP = b.creds.PlainHTTP
				c := repo.New(repo.Options{Credentials: credentialsFor(b.repoURL, creds)})

				ch, err := c.Fetch(t.Context(), b.repoURL, "web", "^1")
				if tc.want == nil {
					if err != nil {
						t.Fatal(err)
					}
					if ch.Digest != "sha256:"+want.Digest {
						t.Errorf("digest %s, want sha256:%s", ch.Digest, want.Digest)
					}
					return
				}
				if !errors.Is(err, tc.want) {
					t.Fatalf("Fetch: %v, want %v", err, tc.want)
				}
				for _, secret := range []string{"hunter2", "s3cret", "t0ken"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the error shows a secret: %v", err)
					}
				}
			})
		}
	}
}

// recorder is a server that serves one archive and records whether
// requests carried an Authorization header.
type recorder struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func startRecorder(t *testing.T, archive []byte) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.auths = append(rec.auths, r.Header.Get("Authorization"))
		rec.mu.Unlock()
		_, _ = w.Write(archive)
	}))
	t.Cleanup(rec.Close)
	return rec
}

// authorizations returns the Authorization headers of the requests so far,
// "" for none.
func (r *recorder) authorizations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}

func TestCredentialsStayWithTheRepository(t *testing.T) {
	repoAuth := chartserver.Auth{Username: "alice", Password: "s3cret"}
	r, err := chartserver.StartRepository(chartserver.RepositoryOptions{Auth: repoAuth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	// Two versions whose archives index.yaml places on another host.
	v1, err := r.AddChartFiles("web", "1.0.0", chartFiles)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := r.AddChartFiles("web", "2.0.0", chartFiles)
	if err != nil {
		t.Fatal(err)
	}
	cdn1, cdn2 := startRecorder(t, v1.Archive), startRecorder(t, v2.Archive)
	if err := r.SetChartURL("web", "1.0.0", cdn1.URL+"/web-1.0.0.tgz"); err != nil {
		t.Fatal(err)
	}
	if err := r.SetChartURL("web", "2.0.0", cdn2.URL+"/web-2.0.0.tgz"); err != nil {
		t.Fatal(err)
	}

	creds := repo.Credentials{Username: "alice", Password: "s3cret"}
	c := repo.New(repo.Options{Credentials: credentialsFor(r.URL(), creds)})
	if _, err := c.Fetch(t.Context(), r.URL(), "web", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if got := cdn1.authorizations(); len(got) != 1 || got[0] != "" {
		t.Errorf("the other host got Authorization headers %q, want one request without", got)
	}
	if r.AuthorizedRequests("/index.yaml") != 1 {
		t.Errorf("the repository itself got %d authorized index requests, want 1", r.AuthorizedRequests("/index.yaml"))
	}

	// An Application's passCredentials sends them along.
	archive, digest, err := c.FetchChart(t.Context(), r.URL(), "web", "2.0.0", true)
	if err != nil {
		t.Fatal(err)
	}
	if digest != "sha256:"+v2.Digest || len(archive) != len(v2.Archive) {
		t.Errorf("FetchChart = %d bytes %s, want %d bytes sha256:%s", len(archive), digest, len(v2.Archive), v2.Digest)
	}
	if got := cdn2.authorizations(); len(got) != 1 || !strings.HasPrefix(got[0], "Basic ") {
		t.Errorf("with passCredentials the other host got Authorization headers %q, want one basic", got)
	}

	// So do the credentials themselves.
	cdn3 := startRecorder(t, v2.Archive)
	if err := r.SetChartURL("web", "2.0.0", cdn3.URL+"/web-2.0.0.tgz"); err != nil {
		t.Fatal(err)
	}
	creds.PassCredentials = true
	c = repo.New(repo.Options{Credentials: credentialsFor(r.URL(), creds)})
	if _, err := c.Fetch(t.Context(), r.URL(), "web", "2.0.0"); err != nil {
		t.Fatal(err)
	}
	if got := cdn3.authorizations(); len(got) != 1 || !strings.HasPrefix(got[0], "Basic ") {
		t.Errorf("with Credentials.PassCredentials the other host got Authorization headers %q, want one basic", got)
	}
}

func TestRedirectToAnotherHostDropsCredentials(t *testing.T) {
	r, err := chartserver.StartRepository(chartserver.RepositoryOptions{Auth: chartserver.Auth{Username: "alice", Password: "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	v1, err := r.AddChartFiles("web", "1.0.0", chartFiles)
	if err != nil {
		t.Fatal(err)
	}
	cdn := startRecorder(t, v1.Archive)

	// The repository's front answers index.yaml itself and redirects
	// archive downloads to another port of the same host.
	backend, err := url.Parse(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/index.yaml" {
			proxy.ServeHTTP(w, req)
			return
		}
		http.Redirect(w, req, cdn.URL+req.URL.Path, http.StatusFound)
	}))
	t.Cleanup(front.Close)

	c := repo.New(repo.Options{Credentials: credentialsFor(front.URL, repo.Credentials{Username: "alice", Password: "s3cret"})})
	ch, err := c.Fetch(t.Context(), front.URL, "web", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Digest != "sha256:"+v1.Digest {
		t.Errorf("digest %s, want sha256:%s", ch.Digest, v1.Digest)
	}
	if got := cdn.authorizations(); len(got) != 1 || got[0] != "" {
		t.Errorf("the redirect target got Authorization headers %q, want one request without", got)
	}
}

func TestDigestMismatch(t *testing.T) {
	r, err := chartserver.StartRepository(chartserver.RepositoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	v1, err := r.AddChartFiles("web", "1.0.0", chartFiles)
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Repeat("0", 64)
	if err := r.SetDigest("web", "1.0.0", wrong); err != nil {
		t.Fatal(err)
	}

	c := repo.New(repo.Options{})
	_, err = c.Fetch(t.Context(), r.URL(), "web", "1.0.0")
	if !errors.Is(err, repo.ErrDigestMismatch) {
		t.Fatalf("Fetch: %v, want %v", err, repo.ErrDigestMismatch)
	}
	if !strings.Contains(err.Error(), v1.Digest) || !strings.Contains(err.Error(), wrong) {
		t.Errorf("the error should name both digests: %v", err)
	}

	// The bad download was not cached: once the index is right, the
	// chart is fetched again.
	if err := r.SetDigest("web", "1.0.0", v1.Digest); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resolve(t.Context(), r.URL(), "web", "1.0.0", true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fetch(t.Context(), r.URL(), "web", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if n := r.Requests(r.ArchivePath("web", "1.0.0")); n != 2 {
		t.Errorf("the archive was downloaded %d times, want 2", n)
	}
}

func TestConditionalIndexFetch(t *testing.T) {
	r, err := chartserver.StartRepository(chartserver.RepositoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if _, err := r.AddChartFiles("web", "1.0.0", chartFiles); err != nil {
		t.Fatal(err)
	}
	c := repo.New(repo.Options{})
	for range 2 {
		if v, err := c.Resolve(t.Context(), r.URL(), "web", "", true); err != nil || v != "1.0.0" {
			t.Fatalf("Resolve = %s, %v; want 1.0.0", v, err)
		}
	}
	if got := r.Statuses("/index.yaml"); len(got) != 2 || got[1] != http.StatusNotModified {
		t.Errorf("index.yaml answers %v, want 200 then 304 Not Modified", got)
	}
}

// TestTLS talks to a repository that demands a client certificate and
// whose server certificate only the given CA bundle vouches for.
func TestTLS(t *testing.T) {
	r, err := chartserver.StartRepository(chartserver.RepositoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if _, err := r.AddChartFiles("web", "1.0.0", chartFiles); err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, clientCert := clientCertificate(t)
	backend, err := url.Parse(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(backend))
	pool := x509.NewCertPool()
	pool.AddCert(clientCert)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	cases := []struct {
		name  string
		creds repo.Credentials
		want  error
	}{
		{name: "client certificate and CA", creds: repo.Credentials{CertData: certPEM, KeyData: keyPEM, CAData: caPEM}},
		{name: "unknown CA", creds: repo.Credentials{CertData: certPEM, KeyData: keyPEM}, want: repo.ErrUnreachable},
		{name: "unparsable certificate", creds: repo.Credentials{CertData: []byte("not PEM"), KeyData: keyPEM, CAData: caPEM}, want: repo.ErrInvalidCredentials},
		{name: "CA bundle without certificates", creds: repo.Credentials{CAData: []byte("nothing here")}, want: repo.ErrInvalidCredentials},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := repo.New(repo.Options{Credentials: credentialsFor(srv.URL, tc.creds)})
			v, err := c.Resolve(t.Context(), srv.URL, "web", "", false)
			if tc.want == nil {
				if err != nil || v != "1.0.0" {
					t.Errorf("Resolve = %s, %v; want 1.0.0", v, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("Resolve: %v, want %v", err, tc.want)
			}
		})
	}
}

// clientCertificate makes a self-signed TLS client certificate.
func clientCertificate(t *testing.T) (certPEM, keyPEM []byte, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "navarch"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IsCA:         true,

		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err = x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		cert
}
