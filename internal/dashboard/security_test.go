package dashboard

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/scheme"
	"github.com/navarch-io/navarch/internal/testenv"
)

// csrfOf reads the CSRF token of a page the client gets.
func csrfOf(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	code, body, _ := get(t, c, u)
	m := csrfField.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("GET %s: %d, want a page with a CSRF field:\n%s", u, code, body)
	}
	return m[1]
}

// A site whose name resolves to 127.0.0.1 (DNS rebinding) is same-origin with itself, so its
// script could read the local dashboard and post its forms, acting with the user's kubeconfig.
func TestLocalModeAnswersOnlyToLoopbackHostNames(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	createApp(t, ns, "web", "", "dev", navarchv1.SyncStatusOutOfSync, navarchv1.HealthHealthy)
	srv := startDashboard(t, Options{Username: "alice"})
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	evil := "evil.example.com:" + strconv.Itoa(port)
	c := browserClient(t)
	for _, path := range []string{"/", "/events", "/applications/" + ns + "/web", "/login"} {
		if code, body, _ := get(t, c, srv.URL+path, "Host", evil); code != http.StatusMisdirectedRequest || strings.Contains(body, ns) {
			t.Errorf("GET %s with Host %s: %d, want 421 without the page:\n%s", path, evil, code, body)
		}
	}
	for _, host := range []string{"localhost:" + strconv.Itoa(port), "127.0.0.1:" + strconv.Itoa(port), "[::1]:" + strconv.Itoa(port)} {
		if code, _, _ := get(t, c, srv.URL+"/applications/"+ns+"/web", "Host", host); code != http.StatusOK {
			t.Errorf("GET with Host %s: %d, want 200", host, code)
		}
	}
	// Even with a session and its CSRF token (which a rebinding page could read before the
	// fix), a post to the rebound name is refused and nothing changes.
	csrf := csrfOf(t, c, srv.URL+"/applications/"+ns+"/web")
	code, _, _ := post(t, c, srv.URL+"/applications/"+ns+"/web/sync", url.Values{"csrf": {csrf}, "confirmed": {"yes"}},
		"Host", evil, "Origin", "http://"+evil, "Sec-Fetch-Site", "same-origin")
	if code != http.StatusMisdirectedRequest {
		t.Errorf("sync posted to Host %s: %d, want 421", evil, code)
	}
	testenv.Consistently(t, 2*time.Second, "a rebound page's sync requests no operation", func() string {
		if got := operationOf(t, ns, "web"); got != "" {
			return "operation " + got
		}
		return ""
	})
}

// Only proxy mode trusts the proxy's headers: in local mode anyone on the machine could send
// them, and a page could not, but they must not change whom the dashboard acts as either way.
func TestLocalModeIgnoresTheProxyHeaders(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	createApp(t, ns, "web", "", "dev", navarchv1.SyncStatusOutOfSync, navarchv1.HealthHealthy)
	srv := startDashboard(t, Options{Username: "alice"})
	c := browserClient(t)
	spoof := []string{"X-Forwarded-User", "mallory", "X-Forwarded-Groups", "system:masters", "Impersonate-User", "mallory"}
	code, body, _ := get(t, c, srv.URL+"/applications/"+ns+"/web", spoof...)
	if code != http.StatusOK || strings.Contains(body, "mallory") || !strings.Contains(body, `class="user">alice<`) {
		t.Fatalf("local mode with proxy headers: %d, want the page as alice:\n%s", code, body)
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field:\n%s", body)
	}
	if code, _, _ := post(t, c, srv.URL+"/applications/"+ns+"/web/sync", url.Values{"csrf": {m[1]}, "confirmed": {"yes"}}, spoof...); code != http.StatusSeeOther {
		t.Fatalf("sync: %d, want 303", code)
	}
	if got := operationOf(t, ns, "web"); got != "sync by alice" {
		t.Errorf("after a sync with proxy headers in local mode the operation is %q, want a sync by alice", got)
	}
}

func TestCookiesAreSecureOverHTTPSAndSessionsEndAtLogout(t *testing.T) {
	token := "s3cret-token-0123456789"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startDashboard(t, Options{Address: "0.0.0.0:0", TokenFile: file})
	u, _ := url.Parse(srv.URL)

	// A session id the attacker planted before login is not adopted: login issues a new one.
	c := browserClient(t)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: "planted"}})
	if code, _, h := get(t, c, srv.URL+"/"); code != http.StatusSeeOther || h.Get("Location") != "/login" {
		t.Errorf("GET / with a planted session: %d to %q, want 303 to /login", code, h.Get("Location"))
	}
	code, _, h := post(t, c, srv.URL+"/login", url.Values{"token": {token}}, "X-Forwarded-Proto", "https")
	cookie := h.Get("Set-Cookie")
	if code != http.StatusSeeOther || strings.Contains(cookie, "planted") || !strings.Contains(cookie, "; Secure") {
		t.Fatalf("login behind a TLS-terminating proxy: %d, cookie %q; want 303 and a new Secure session cookie", code, cookie)
	}
	// Over plain HTTP the cookie cannot be Secure, or the browser would never send it back.
	if _, _, h := post(t, browserClient(t), srv.URL+"/login", url.Values{"token": {token}}); strings.Contains(h.Get("Set-Cookie"), "Secure") {
		t.Errorf("login over plain HTTP set a Secure cookie: %q", h.Get("Set-Cookie"))
	}

	// The browser got the Secure cookie over http here; give it back as a browser on https would.
	for _, ck := range strings.Split(cookie, ";")[:1] {
		name, value, _ := strings.Cut(ck, "=")
		c.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value}})
	}
	csrf := csrfOf(t, c, srv.URL+"/clusters")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
	stream, err := c.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("event stream after login: %v %v", err, stream)
	}
	defer stream.Body.Close()
	if acao := stream.Header.Get("Access-Control-Allow-Origin"); acao != "" {
		t.Errorf("the event stream allows cross-origin reads: Access-Control-Allow-Origin %q", acao)
	}

	code, _, h = post(t, c, srv.URL+"/logout", url.Values{"csrf": {csrf}}, "X-Forwarded-Proto", "https")
	if code != http.StatusSeeOther || !strings.Contains(h.Get("Set-Cookie"), "Max-Age=0") || !strings.Contains(h.Get("Set-Cookie"), "Secure") {
		t.Errorf("logout: %d, cookie %q; want 303 clearing a Secure cookie", code, h.Get("Set-Cookie"))
	}
	if code, _, _ := get(t, c, srv.URL+"/"); code != http.StatusSeeOther {
		t.Errorf("GET / with the logged-out session: %d, want 303 to /login", code)
	}
	// The open event stream of the logged-out session ends at the next change.
	ns := testenv.Namespace(t, env.Client)
	createApp(t, ns, "web", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	lines := bufio.NewScanner(stream.Body)
	for lines.Scan() {
		if strings.Contains(lines.Text(), ns) {
			t.Fatalf("the logged-out session's event stream still sends changes: %s", lines.Text())
		}
	}
	if ctx.Err() != nil {
		t.Errorf("the logged-out session's event stream did not end")
	}
}

func TestSessionsAreBounded(t *testing.T) {
	s := &sessions{ids: map[string]time.Time{}}
	first := s.create()
	for i := range maxSessions {
		s.ids[strconv.Itoa(i)] = time.Now().Add(sessionLifetime)
	}
	s.ids["expired"] = time.Now().Add(-time.Second)
	last := s.create()
	if len(s.ids) > maxSessions {
		t.Errorf("%d sessions, want at most %d", len(s.ids), maxSessions)
	}
	if s.valid(first) || s.valid("expired") || !s.valid(last) {
		t.Errorf("the oldest and the expired session should have made room for the new one")
	}
}

func TestLargeRequestBodiesAreRefused(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	createApp(t, ns, "web", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	srv := startDashboard(t, Options{})
	c := browserClient(t)
	csrf := csrfOf(t, c, srv.URL+"/applications/"+ns+"/web")
	form := url.Values{"csrf": {csrf}, "confirmed": {"yes"}, "pad": {strings.Repeat("x", 1<<20)}}
	if code, _, _ := post(t, c, srv.URL+"/applications/"+ns+"/web/refresh", form); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 1 MiB form: %d, want 413", code)
	}
}

func TestEventStreamsAreBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := New(ctx, Options{Address: "127.0.0.1:0", Config: env.Management.RESTConfig(), Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	d.streams = make(chan struct{}, 1)
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	open := func() *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := open()
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first stream: %d", first.StatusCode)
	}
	second := open()
	_ = second.Body.Close()
	if second.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a stream past the limit: %d, want 503", second.StatusCode)
	}
	_ = first.Body.Close()
	testenv.Eventually(t, "a closed stream frees its place", func() string {
		resp := open()
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		return ""
	})
}

// "localhost" passes the address check, but may resolve to any interface: Serve checks the
// address it is actually bound to.
func TestServeRefusesANonLoopbackListenerWithoutAuth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := New(ctx, Options{Address: "localhost:0", Config: env.Management.RESTConfig(), Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := d.Serve(ctx, l); err == nil || !strings.Contains(err.Error(), "needs authentication") {
		t.Errorf("Serve on %s without auth: %v, want a refusal", l.Addr(), err)
	}
}

// Namespace limits what the dashboard's own credentials act on, not only what it shows.
func TestActionsOutsideTheNamespaceAreRefused(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	other := ns + "-other"
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}); err != nil {
		t.Fatal(err)
	}
	createApp(t, ns, "web", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	createApp(t, other, "web", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	srv := startDashboard(t, Options{Namespace: ns})
	c := browserClient(t)
	csrf := csrfOf(t, c, srv.URL+"/applications/"+ns+"/web")
	if code, _, _ := post(t, c, srv.URL+"/applications/"+other+"/web/sync", url.Values{"csrf": {csrf}, "confirmed": {"yes"}}); code != http.StatusNotFound {
		t.Errorf("sync of an Application outside --namespace: %d, want 404", code)
	}
	if got := operationOf(t, other, "web"); got != "" {
		t.Errorf("an Application outside --namespace got operation %q", got)
	}
}

// Status messages, annotations and destinations are written by whoever can write to the
// cluster or its Git repositories: the pages show them as text.
func TestClusterContentIsEscaped(t *testing.T) {
	const attack = `"><img src=x onerror=alert(1)><script>alert(2)</script>`
	ns := testenv.Namespace(t, env.Client)
	app := testApp(ns, "web", "shop", "apps/web", "dev"+attack, "", "")
	app.Labels["test"] = ns
	app.Annotations = map[string]string{navarchv1.AnnotationPullRequest: "o/r" + attack + "#1@abc"}
	ctx := context.Background()
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	app.Status.Health = navarchv1.HealthStatus{Status: navarchv1.HealthDegraded, Message: attack}
	app.Status.Conditions = []metav1.Condition{{Type: navarchv1.ApplicationSyncError, Status: metav1.ConditionTrue,
		Reason: "Failed", Message: attack, LastTransitionTime: metav1.Now()}}
	app.Status.Resources = []navarchv1.ResourceStatus{{ResourceRef: navarchv1.ResourceRef{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "cm"}, Status: navarchv1.SyncStatusOutOfSync, Message: attack}}
	if err := env.Client.Status().Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	set := &navarchv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: navarchv1.ApplicationSetSpec{
		Generators: []navarchv1.ApplicationSetGenerator{{List: &navarchv1.ListGenerator{}}},
		Template: navarchv1.ApplicationSetTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Name: "shop"},
			Spec: navarchv1.ApplicationSpec{Source: navarchv1.ApplicationSource{RepoURL: "https://git.example.com/r.git"}, Destination: navarchv1.ApplicationDestination{Name: "dev"}}}}}
	if err := env.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	srv := startDashboard(t, Options{})
	c := browserClient(t)
	for _, path := range []string{"/?selector=test%3D" + ns, "/?applicationset=shop", "/applications/" + ns + "/web", "/applicationsets/" + ns + "/shop"} {
		testenv.Eventually(t, path+" shows the hostile content as text only", func() string {
			_, body, _ := get(t, c, srv.URL+path)
			if strings.Contains(body, "<img") || strings.Contains(body, "<script>") {
				return "unescaped:\n" + body
			}
			if !strings.Contains(body, "onerror=alert(1)") {
				return "the content is not shown:\n" + body
			}
			return ""
		})
	}
	// The matrix's hand-written cells and heads, as the event stream sends them.
	stored := &navarchv1.Application{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), stored); err != nil {
		t.Fatal(err)
	}
	m := buildMatrix([]*navarchv1.Application{stored}, nil, filter{})
	for _, h := range []string{string(columnHeadHTML(m.Columns[0])), string(cellHTML(m.Rows[0].Key, m.Columns[0].Name, m.Rows[0].Cells[m.Columns[0].Name])), string(summaryHTML(m))} {
		if strings.Contains(h, "<img") || strings.Contains(h, "<script>") {
			t.Errorf("unescaped fragment: %s", h)
		}
	}
}
