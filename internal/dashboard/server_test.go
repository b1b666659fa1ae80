package dashboard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/scheme"
	"github.com/navarch-io/navarch/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// The benchmark needs no cluster.
	if onlyPure() {
		os.Exit(m.Run())
	}
	os.Exit(testenv.Main(m, testenv.Options{Name: "dashboard"}, &env))
}

// onlyPure reports whether -run selects no test that needs a cluster (e.g. make bench).
func onlyPure() bool {
	for _, arg := range os.Args[1:] {
		if v, ok := strings.CutPrefix(arg, "-test.run="); ok && (v == "^$" || v == "NONE") {
			return true
		}
	}
	return false
}

// operationOf reads the operation requested on an Application ("" when none): what a
// dashboard action leaves for the controller.
func operationOf(t *testing.T, ns, name string) string {
	t.Helper()
	app := &navarchv1.Application{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
		t.Fatal(err)
	}
	op := app.Operation
	switch {
	case op == nil:
		return ""
	case op.Rollback != nil:
		return fmt.Sprintf("rollback to %d by %s", op.Rollback.ID, op.InitiatedBy.Username)
	}
	return "sync by " + op.InitiatedBy.Username
}

// startDashboard serves a dashboard of the test environment's management cluster.
func startDashboard(t *testing.T, opts Options) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts.Config, opts.Scheme = env.Management.RESTConfig(), scheme.New()
	if opts.Address == "" {
		opts.Address = "127.0.0.1:0"
	}
	d, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// browserClient keeps cookies and does not follow redirects, so tests see them.
func browserClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string, header ...string) (int, string, http.Header) {
	t.Helper()
	return send(t, c, http.MethodGet, u, nil, header...)
}

func post(t *testing.T, c *http.Client, u string, form url.Values, header ...string) (int, string, http.Header) {
	t.Helper()
	return send(t, c, http.MethodPost, u, strings.NewReader(form.Encode()), header...)
}

// send makes a request with the header's name/value pairs; "Host" sets the request's Host,
// as a browser would send it for the name it resolved.
func send(t *testing.T, c *http.Client, method, u string, body io.Reader, header ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if http.CanonicalHeaderKey(header[i]) == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), resp.Header
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// createApp creates an Application in ns and writes its status, as the controller would.
func createApp(t *testing.T, ns, name, set, cluster string, sync navarchv1.SyncStatusCode, health navarchv1.HealthStatusCode) *navarchv1.Application {
	t.Helper()
	app := testApp(ns, name, set, "apps/"+name, cluster, "", "")
	app.Labels["test"] = ns
	if err := env.Client.Create(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	setStatus(t, app, sync, health)
	return app
}

func setStatus(t *testing.T, app *navarchv1.Application, sync navarchv1.SyncStatusCode, health navarchv1.HealthStatusCode) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
		t.Fatal(err)
	}
	app.Status.Sync.Status, app.Status.Health.Status = sync, health
	app.Status.History = []navarchv1.RevisionHistory{{ID: 1, Revision: "aaaa", DeployedAt: metav1.Now()}, {ID: 2, Revision: "bbbb", DeployedAt: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, app); err != nil {
		t.Fatal(err)
	}
}

func TestANonLoopbackAddressWithoutAuthIsRefused(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Address: "0.0.0.0:8080"}, "needs authentication: set --auth-token-file"},
		{Options{Address: ":8080"}, "needs authentication"},
		{Options{Address: "192.0.2.1:8080"}, "needs authentication"},
		{Options{Address: "0.0.0.0:8080", TokenFile: "t", ProxyUserHeader: "X-Forwarded-User"}, "exclusive"},
		{Options{Address: "127.0.0.1:8080", ProxyGroupsHeader: "X-Forwarded-Groups"}, "needs --auth-proxy-header"},
	} {
		_, err := New(context.Background(), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.opts, err, tc.want)
		}
	}
	for _, ok := range []Options{{Address: "127.0.0.1:8080"}, {Address: "[::1]:8080"}, {Address: "localhost:8080"},
		{Address: "0.0.0.0:8080", TokenFile: "t"}, {Address: "0.0.0.0:8080", ProxyUserHeader: "X-Forwarded-User"}} {
		if err := CheckAuth(ok); err != nil {
			t.Errorf("CheckAuth(%+v) = %v", ok, err)
		}
	}
}

func TestTokenModeRefusesRequestsWithoutTheToken(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	createApp(t, ns, "web", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	token := "s3cret-token-0123456789"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startDashboard(t, Options{Address: "0.0.0.0:0", TokenFile: file})
	c := browserClient(t)

	if code, _, h := get(t, c, srv.URL+"/"); code != http.StatusSeeOther || h.Get("Location") != "/login" {
		t.Errorf("GET / without a token: %d to %q, want 303 to /login", code, h.Get("Location"))
	}
	if code, _, _ := get(t, c, srv.URL+"/events", "Accept", "text/event-stream"); code != http.StatusUnauthorized {
		t.Errorf("GET /events without a token: %d, want 401", code)
	}
	if code, _, _ := post(t, c, srv.URL+"/applications/"+ns+"/web/sync", url.Values{"confirmed": {"yes"}}); code != http.StatusUnauthorized {
		t.Errorf("POST sync without a token: %d, want 401", code)
	}
	if code, _, _ := get(t, c, srv.URL+"/", "Authorization", "Bearer wrong-token-0123456789"); code != http.StatusSeeOther {
		t.Errorf("GET / with a wrong token: %d, want 303 to the login page", code)
	}
	if code, body, _ := get(t, c, srv.URL+"/?selector=test%3D"+ns, "Authorization", "Bearer "+token); code != http.StatusOK || !strings.Contains(body, "Synced · Healthy") {
		t.Errorf("GET / with the token: %d, want 200 with the matrix:\n%s", code, body)
	}
	if code, body, _ := post(t, c, srv.URL+"/login", url.Values{"token": {"nope"}}); code != http.StatusUnauthorized || !strings.Contains(body, "not the dashboard") {
		t.Errorf("login with a wrong token: %d, want 401", code)
	}
	code, _, h := post(t, c, srv.URL+"/login", url.Values{"token": {token}})
	if code != http.StatusSeeOther {
		t.Fatalf("login with the token: %d, want 303", code)
	}
	cookie := h.Get("Set-Cookie")
	for _, want := range []string{"navarch_session=", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("session cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, token) {
		t.Errorf("the session cookie holds the token: %q", cookie)
	}
	code, body, _ := get(t, c, srv.URL+"/applications/"+ns+"/web")
	if code != http.StatusOK {
		t.Fatalf("GET the Application after login: %d\n%s", code, body)
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the Application page has no CSRF field:\n%s", body)
	}
	if code, body, _ := post(t, c, srv.URL+"/applications/"+ns+"/web/sync", url.Values{"csrf": {m[1]}, "confirmed": {"yes"}}); code != http.StatusSeeOther {
		t.Errorf("sync after login: %d, want 303\n%s", code, body)
	}
	if got := operationOf(t, ns, "web"); got != "sync by dashboard" {
		t.Errorf("after the sync, the Application's operation is %q, want a sync by dashboard", got)
	}
}

func TestStateChangingRequestsNeedTheCSRFTokenAndTheSameOrigin(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	createApp(t, ns, "web", "", "dev", navarchv1.SyncStatusOutOfSync, navarchv1.HealthHealthy)
	srv := startDashboard(t, Options{Username: "alice"})
	c := browserClient(t)
	_, body, h := get(t, c, srv.URL+"/applications/"+ns+"/web")
	for header, want := range map[string]string{
		"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
		"Content-Security-Policy": "script-src 'self'", "Referrer-Policy": "same-origin",
	} {
		if !strings.Contains(h.Get(header), want) {
			t.Errorf("header %s = %q, want %q", header, h.Get(header), want)
		}
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field in the page:\n%s", body)
	}
	action := srv.URL + "/applications/" + ns + "/web/sync"
	for _, tc := range []struct {
		name   string
		form   url.Values
		header []string
	}{
		{"no token", url.Values{"confirmed": {"yes"}}, nil},
		{"a wrong token", url.Values{"csrf": {strings.Repeat("0", 64)}, "confirmed": {"yes"}}, nil},
		{"another origin", url.Values{"csrf": {m[1]}, "confirmed": {"yes"}}, []string{"Origin", "https://evil.example.com"}},
		{"a cross-site fetch", url.Values{"csrf": {m[1]}, "confirmed": {"yes"}}, []string{"Sec-Fetch-Site", "cross-site"}},
	} {
		if code, _, _ := post(t, c, action, tc.form, tc.header...); code != http.StatusForbidden {
			t.Errorf("sync with %s: %d, want 403", tc.name, code)
		}
	}
	// Another browser (another session) cannot reuse the token.
	if code, _, _ := post(t, browserClient(t), action, url.Values{"csrf": {m[1]}, "confirmed": {"yes"}}); code != http.StatusForbidden {
		t.Errorf("sync from another session with this session's token: %d, want 403", code)
	}
	// GET never changes anything.
	if code, _, _ := get(t, c, action); code != http.StatusMethodNotAllowed {
		t.Errorf("GET on an action: %d, want 405", code)
	}
	if got := operationOf(t, ns, "web"); got != "" {
		t.Fatalf("refused requests requested an operation: %s", got)
	}

	// Without confirmed=yes the dashboard asks first (the page for browsers without
	// JavaScript); the confirmation page's form runs the action.
	code, body, _ := post(t, c, action, url.Values{"csrf": {m[1]}}, "Origin", srv.URL)
	if code != http.StatusOK || !strings.Contains(body, "Sync Application "+ns+"/web with Git now?") || !strings.Contains(body, `name="confirmed" value="yes"`) {
		t.Fatalf("unconfirmed sync: %d, want the confirmation page:\n%s", code, body)
	}
	if got := operationOf(t, ns, "web"); got != "" {
		t.Fatalf("an unconfirmed action requested an operation: %s", got)
	}
	code, _, h = post(t, c, action, url.Values{"csrf": {m[1]}, "confirmed": {"yes"}}, "Origin", srv.URL)
	if code != http.StatusSeeOther || h.Get("Location") != "/applications/"+ns+"/web" {
		t.Fatalf("confirmed sync: %d to %q, want 303 to the Application", code, h.Get("Location"))
	}
	if got := operationOf(t, ns, "web"); got != "sync by alice" {
		t.Fatalf("after the confirmed sync the operation is %q, want a sync by alice", got)
	}
	if _, body, _ := get(t, c, srv.URL+"/applications/"+ns+"/web"); !strings.Contains(body, "Requested a sync of Application "+ns+"/web") {
		t.Errorf("the Application page does not show the action's result:\n%s", body)
	}
	// A rollback replaces the sync request the controller (not running here) has not started.
	if code, _, _ := post(t, c, srv.URL+"/applications/"+ns+"/web/rollback", url.Values{"csrf": {m[1]}, "confirmed": {"yes"}, "id": {"1"}}); code != http.StatusSeeOther {
		t.Errorf("rollback: %d", code)
	}
	if got := operationOf(t, ns, "web"); got != "rollback to 1 by alice" {
		t.Errorf("after the rollback the operation is %q", got)
	}
}

func TestFleetPageFiltersAndOrdersProblemsFirst(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	createApp(t, ns, "web-dev", "shop", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	createApp(t, ns, "api", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthDegraded)
	createApp(t, ns, "db", "", "prod", navarchv1.SyncStatusOutOfSync, navarchv1.HealthHealthy)
	srv := startDashboard(t, Options{})
	c := browserClient(t)
	base := srv.URL + "/?selector=test%3D" + ns
	var body string
	testenv.Eventually(t, "the fleet page shows the three Applications", func() string {
		_, body, _ = get(t, c, base)
		for _, name := range []string{"web-dev", "/api", "/db"} {
			if !strings.Contains(body, name) {
				return "no " + name + " in:\n" + body
			}
		}
		return ""
	})
	api, db, web := strings.Index(body, ">api <"), strings.Index(body, ">db <"), strings.Index(body, "shop:")
	if api < 0 || db < 0 || web < 0 || api > db || db > web {
		t.Errorf("rows not in the order degraded, OutOfSync, healthy (api %d, db %d, web %d):\n%s", api, db, web, body)
	}
	for _, tc := range []struct{ query, want, not string }{
		{"&state=failed", "Synced · Degraded", "OutOfSync · Healthy"},
		{"&state=outofsync", "OutOfSync · Healthy", "Synced · Degraded"},
		{"&applicationset=shop", "shop:apps/web-dev", "Synced · Degraded"},
		{"&state=problem", "Synced · Degraded", "shop:apps/web-dev"},
	} {
		_, body, _ := get(t, c, base+tc.query)
		if !strings.Contains(body, tc.want) || strings.Contains(body, tc.not) {
			t.Errorf("filter %s: want %q and not %q in:\n%s", tc.query, tc.want, tc.not, body)
		}
	}
	if _, body, _ := get(t, c, srv.URL+"/?selector=env+in+%28"); !strings.Contains(body, "Filter ignored: selector") {
		t.Errorf("a bad selector is not reported:\n%s", body)
	}
}

func TestTheEventStreamSendsTheChangedCell(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	app := createApp(t, ns, "web", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	srv := startDashboard(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events?selector=test%3D"+ns, nil)
	resp, err := browserClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	setStatus(t, app, navarchv1.SyncStatusOutOfSync, navarchv1.HealthHealthy)
	key, _, _ := rowKey(app)
	id := elementID("c", key, "dev")
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	var seen []string
	for lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(line, "data: ") {
			seen = append(seen, line)
		}
		if strings.Contains(line, id) && strings.Contains(line, "OutOfSync · Healthy") {
			return
		}
	}
	t.Fatalf("no cell event for %s with OutOfSync (%v); events seen:\n%s", id, errors.Join(lines.Err(), ctx.Err()), strings.Join(seen, "\n"))
}

func TestBehindAProxyTheUsersRBACDecidesWhatTheySee(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	createApp(t, ns, "visible", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	other := ns + "-other"
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}); err != nil {
		t.Fatal(err)
	}
	createApp(t, other, "hidden", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	user := "alice-" + ns
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-apps"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"navarch.io"}, Resources: []string{"applications", "applicationsets"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-apps"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-apps"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	srv := startDashboard(t, Options{Address: "0.0.0.0:0", ProxyUserHeader: "X-Forwarded-User", ProxyGroupsHeader: "X-Forwarded-Groups"})
	c := browserClient(t)
	if code, _, _ := get(t, c, srv.URL+"/"); code != http.StatusUnauthorized {
		t.Errorf("GET / without the proxy's header: %d, want 401", code)
	}
	testenv.Eventually(t, "the user sees the Application of the namespace they may read, and not the other", func() string {
		_, body, _ := get(t, c, srv.URL+"/", "X-Forwarded-User", user)
		if !strings.Contains(body, "/visible") || strings.Contains(body, "/hidden") {
			return "fleet page:\n" + body
		}
		return ""
	})
	if code, _, _ := get(t, c, srv.URL+"/applications/"+other+"/hidden", "X-Forwarded-User", user); code != http.StatusNotFound {
		t.Errorf("the Application of a namespace the user may not read: %d, want 404", code)
	}
	// Actions run as the user: impersonated, and the user's RBAC does not allow patching
	// Applications, so the sync is refused with the API server's answer.
	_, body, _ := get(t, c, srv.URL+"/applications/"+ns+"/visible", "X-Forwarded-User", user)
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field:\n%s", body)
	}
	if code, _, _ := post(t, c, srv.URL+"/applications/"+ns+"/visible/sync", url.Values{"csrf": {m[1]}, "confirmed": {"yes"}}, "X-Forwarded-User", user); code != http.StatusSeeOther {
		t.Errorf("sync as %s: %d", user, code)
	}
	if _, body, _ := get(t, c, srv.URL+"/applications/"+ns+"/visible", "X-Forwarded-User", user); !strings.Contains(body, "sync failed") || !strings.Contains(body, "forbidden") {
		t.Errorf("the page does not say that the user may not sync:\n%s", body)
	}
	if got := operationOf(t, ns, "visible"); got != "" {
		t.Errorf("a sync the user may not request was requested: %s", got)
	}
	// The CSRF token is bound to the user: another user behind the same browser session cannot use it.
	if code, _, _ := post(t, c, srv.URL+"/applications/"+ns+"/visible/sync", url.Values{"csrf": {m[1]}, "confirmed": {"yes"}}, "X-Forwarded-User", "mallory"); code != http.StatusForbidden {
		t.Errorf("another user's CSRF token: %d, want 403", code)
	}
}

func TestRefreshAndPromoteGoThroughTheCLIActions(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	createApp(t, ns, "web", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	set := &navarchv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: navarchv1.ApplicationSetSpec{
			Generators: []navarchv1.ApplicationSetGenerator{{List: &navarchv1.ListGenerator{}}},
			Template: navarchv1.ApplicationSetTemplate{
				Metadata: navarchv1.ApplicationSetTemplateMeta{Name: "shop"},
				Spec: navarchv1.ApplicationSpec{
					Source:      navarchv1.ApplicationSource{RepoURL: "https://git.example.com/r.git", Path: "shop"},
					Destination: navarchv1.ApplicationDestination{Name: "dev"},
				},
			},
		},
	}
	if err := env.Client.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	srv := startDashboard(t, Options{})
	c := browserClient(t)
	_, body, _ := get(t, c, srv.URL+"/applications/"+ns+"/web")
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field:\n%s", body)
	}
	if code, _, _ := post(t, c, srv.URL+"/applications/"+ns+"/web/refresh", url.Values{"csrf": {m[1]}, "confirmed": {"yes"}}); code != http.StatusSeeOther {
		t.Fatalf("refresh: %d", code)
	}
	app := &navarchv1.Application{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, app); err != nil {
		t.Fatal(err)
	}
	if _, ok := app.Annotations[navarchv1.AnnotationRefresh]; !ok {
		t.Errorf("after Refresh the Application has no %s annotation: %v", navarchv1.AnnotationRefresh, app.Annotations)
	}
	// Promoting a set without a RollingSync strategy is refused, and the page says why.
	if code, _, _ := post(t, c, srv.URL+"/applicationsets/"+ns+"/shop/promote", url.Values{"csrf": {m[1]}, "confirmed": {"yes"}, "step": {"1"}}); code != http.StatusSeeOther {
		t.Fatalf("promote: %d", code)
	}
	// The cache listed the set before the dashboard served, so the page shows it, and the
	// result of the action once.
	if code, body, _ := get(t, c, srv.URL+"/applicationsets/"+ns+"/shop"); code != http.StatusOK || !strings.Contains(body, "promote failed") || !strings.Contains(body, "RollingSync") {
		t.Errorf("the ApplicationSet page does not say why the promotion was refused: %d\n%s", code, body)
	}
}

// The result of an action is shown once, by the page the redirect loads: a live page's
// refresh of itself, which can cross the post, leaves it there.
func TestTheFlashGoesToThePageTheRedirectLoads(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	createApp(t, ns, "web", "", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	srv := startDashboard(t, Options{})
	c := browserClient(t)
	page := srv.URL + "/applications/" + ns + "/web"
	_, body, _ := get(t, c, page)
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field:\n%s", body)
	}
	if code, _, _ := post(t, c, page+"/refresh", url.Values{"csrf": {m[1]}, "confirmed": {"yes"}}); code != http.StatusSeeOther {
		t.Fatalf("refresh: %d", code)
	}
	if _, body, _ := get(t, c, page, "Accept", "text/html", liveRefreshHeader, "1"); strings.Contains(body, `id="flash"`) {
		t.Errorf("the live refresh took the flash message:\n%s", body)
	}
	if _, body, _ := get(t, c, page); !strings.Contains(body, `id="flash"`) || !strings.Contains(body, "web") {
		t.Errorf("the page after the action shows no result:\n%s", body)
	}
	if _, body, _ := get(t, c, page); strings.Contains(body, `id="flash"`) {
		t.Errorf("the result is shown a second time:\n%s", body)
	}
}
