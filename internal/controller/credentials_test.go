package controller

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/credentials"
	"github.com/navarch-io/navarch/internal/testenv"
)

// captured is one request a capturing server received.
type captured struct {
	path, authorization string
}

// captureServer is a real HTTP server on loopback that records every request with its
// Authorization header, standing in for a host that must never see a credential. It answers
// 404, or redirects everything to redirectTo when set.
type captureServer struct {
	addr string // host:port
	mu   sync.Mutex
	reqs []captured
}

func startCaptureServer(t *testing.T, redirectTo string) *captureServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &captureServer{addr: l.Addr().String()}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, captured{path: r.URL.Path, authorization: r.Header.Get("Authorization")})
		s.mu.Unlock()
		if redirectTo != "" {
			http.Redirect(w, r, redirectTo+r.URL.RequestURI(), http.StatusFound)
			return
		}
		http.NotFound(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *captureServer) url() string { return "http://" + s.addr }

func (s *captureServer) requests() []captured {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]captured(nil), s.reqs...)
}

// authorized returns the requests that carried an Authorization header.
func (s *captureServer) authorized() []captured {
	var out []captured
	for _, r := range s.requests() {
		if r.authorization != "" {
			out = append(out, r)
		}
	}
	return out
}

func createCredentialSecret(t *testing.T, name, url, user, password string) {
	t.Helper()
	ctx := context.Background()
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.SystemNamespace,
			Labels: map[string]string{credentials.LabelSecretType: credentials.SecretTypeRepository}},
		StringData: map[string]string{"url": url, "username": user, "password": password},
	}
	if err := env.Client.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), sec) })
}

// gitGeneratorSet is an ApplicationSet whose Git generator reads repoURL.
func gitGeneratorSet(name, repoURL string) string {
	return fmt.Sprintf(`
metadata: {name: %s}
spec:
  generators: [{git: {repoURL: %q, revision: main, directories: [{path: 'apps/*'}]}}]
  template:
    metadata: {name: '%s-{{path.basename}}'}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: '{{path}}'}
      destination: {name: in-cluster}
`, name, repoURL, name)
}

// TestRepositoryCredentialsStayWithTheirHost follows the security probe of the Git generator:
// credentials go only to the scheme, host, port and path their Secret names.
func TestRepositoryCredentialsStayWithTheirHost(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	owner := startCaptureServer(t, "")   // a host a Secret is for, as a whole
	private := startCaptureServer(t, "") // a host where a Secret is for /private only
	victim := startCaptureServer(t, "")  // a host a user names to steal credentials
	redirector := startCaptureServer(t, victim.url())
	const user, password = "deploy-bot", "s3cr3t-Pa55"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	createCredentialSecret(t, "probe-owner", owner.url(), user, password)
	createCredentialSecret(t, "probe-private", private.url()+"/private", user, password)
	createCredentialSecret(t, "probe-redirector", redirector.url(), user, password)

	// Controls: the Secrets' own repositories get the credentials. This also proves that the
	// controller's Secret cache holds the Secrets before the other cases run.
	applyAppSet(t, ns, gitGeneratorSet("control", owner.url()+"/team/repo.git"))
	applyAppSet(t, ns, gitGeneratorSet("control-private", private.url()+"/private/repo.git"))
	for _, srv := range []*captureServer{owner, private} {
		testenv.Eventually(t, "the credentials reach their own host", func() string {
			for _, r := range srv.authorized() {
				if strings.HasSuffix(r.path, "/repo.git/info/refs") && r.authorization == basic {
					return ""
				}
			}
			return fmt.Sprintf("requests seen: %+v", srv.requests())
		})
	}

	t.Run("user info naming the Secret's host", func(t *testing.T) {
		// http://<owner>@<victim>/probe.git reads like the owner's host but names the victim.
		repo := "http://" + owner.addr + "@" + victim.addr + "/probe.git"
		applyAppSet(t, ns, gitGeneratorSet("userinfo", repo))
		cond := waitForCondition(t, ns, "userinfo", navarchv1.ApplicationSetErrorOccurred, metav1.ConditionTrue, navarchv1.ReasonGeneratorError)
		if !strings.Contains(cond.Message, "user info") {
			t.Errorf("the error does not say that user info is refused: %s", cond.Message)
		}
		if got := victim.requests(); len(got) != 0 {
			t.Errorf("the other host received requests: %+v", got)
		}
	})

	t.Run("path prefix that is not a parent directory", func(t *testing.T) {
		applyAppSet(t, ns, gitGeneratorSet("prefix", private.url()+"/privateXYZ/repo.git"))
		waitForCondition(t, ns, "prefix", navarchv1.ApplicationSetErrorOccurred, metav1.ConditionTrue, navarchv1.ReasonGeneratorError)
		testenv.Eventually(t, "the repository was asked for", func() string {
			for _, r := range private.requests() {
				if strings.HasPrefix(r.path, "/privateXYZ/") {
					if r.authorization != "" {
						t.Fatalf("credentials of %s/private were sent to %s: %q", private.url(), r.path, r.authorization)
					}
					return ""
				}
			}
			return "no request for /privateXYZ/ yet"
		})
	})

	t.Run("redirect to another host", func(t *testing.T) {
		applyAppSet(t, ns, gitGeneratorSet("redirect", redirector.url()+"/repo.git"))
		waitForCondition(t, ns, "redirect", navarchv1.ApplicationSetErrorOccurred, metav1.ConditionTrue, navarchv1.ReasonGeneratorError)
		testenv.Eventually(t, "the redirect was followed", func() string {
			if len(victim.requests()) == 0 {
				return fmt.Sprintf("the redirector saw %+v, the other host nothing", redirector.requests())
			}
			return ""
		})
		if len(redirector.authorized()) == 0 {
			t.Errorf("the redirecting host, which the Secret is for, got no credentials: %+v", redirector.requests())
		}
		if got := victim.authorized(); len(got) != 0 {
			t.Errorf("credentials followed the redirect to another host: %+v", got)
		}
	})

	if got := victim.authorized(); len(got) != 0 {
		t.Errorf("the other host received credentials: %+v", got)
	}
}

// TestCredentialLookupsListNoSecrets: the credential Secrets are watched, so passes of Git
// generators cost no Secret LIST however often they run.
func TestCredentialLookupsListNoSecrets(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	repo := createRepo(t, "credential-lists", "apps/a", "apps/b")
	createCredentialSecret(t, "credential-lists", repo, "bot", "token")
	set := applyAppSet(t, ns, gitGeneratorSet("s", repo))
	waitForApps(t, ns, "s-a,s-b")
	before := controllerWrites.secretLists.Load()
	for range 20 {
		refresh(t, set)
	}
	if lists := controllerWrites.secretLists.Load() - before; lists != 0 {
		t.Errorf("20 passes of a Git generator listed Secrets %d times, want 0 (the Secrets are watched)", lists)
	}
}
