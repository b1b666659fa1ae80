package fleet_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/chartserver"
	"github.com/navarch-io/navarch/internal/credentials"
	"github.com/navarch-io/navarch/internal/testenv"
)

// privateChartRepository starts a Helm repository that demands auth of every request.
func privateChartRepository(t *testing.T, auth chartserver.Auth) *chartserver.Repository {
	t.Helper()
	r, err := chartserver.StartRepository(chartserver.RepositoryOptions{Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// chartRegistry starts an OCI registry that demands auth of every request.
func chartRegistry(t *testing.T, auth chartserver.Auth) *chartserver.Registry {
	t.Helper()
	r, err := chartserver.StartRegistry(chartserver.RegistryOptions{Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// comparisonError is the message of the Application's ComparisonError condition, "" when it
// has none.
func comparisonError(a *navarchv1.Application) string {
	if c := meta.FindStatusCondition(a.Status.Conditions, navarchv1.ApplicationComparisonError); c != nil && c.Status == metav1.ConditionTrue {
		return c.Message
	}
	return ""
}

// containsAll reports whether s contains every one of parts.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// A chart in a private OCI registry: the Application reads it with the repository Secret
// for the registry, picks the newest version its constraint allows, and syncs. Once the
// Secret's password is wrong, a refresh is a ComparisonError that names the registry and
// says the credentials were refused; a newer chart is not deployed and nothing is pruned.
func TestOCIChartWithRegistryCredentials(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-web"
	reg := chartRegistry(t, chartserver.Auth{Username: "navarch-bot", Password: "registry-pass"})
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, err := reg.PushChartFiles("charts", "web", v, webChart()); err != nil {
			t.Fatalf("push chart web %s: %v", v, err)
		}
	}
	secret := ns + "-registry"
	repositorySecret(t, secret, reg.URL(), map[string]string{
		credentials.KeyUsername:  "navarch-bot",
		credentials.KeyPassword:  "registry-pass",
		credentials.KeyPlainHTTP: "true",
	})

	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: web}
spec:
  source: {repoURL: '%s/charts', chart: web, targetRevision: '^1.0'}
  destination: {name: east, namespace: %s}
  syncPolicy:
    automated: {prune: true}
    syncOptions: [CreateNamespace=true]
`, reg.URL(), target))
	waitForApp(t, app, "Synced and Healthy at chart 1.1.0, the newest of ^1.0", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && a.Status.Sync.Revision == "1.1.0"
	})
	waitForConfigMap(t, target, "web-config", map[string]string{"chart": "1.1.0", "namespace": target})
	tags := "/v2/charts/web/tags/list"
	if statuses := reg.Statuses(tags); !slices.Contains(statuses, http.StatusOK) {
		t.Errorf("the registry answered the tag list with %v: want it read with the Secret's credentials", statuses)
	}

	// The Secret's password goes wrong, as after a rotation on the registry that did not reach
	// the Secret. The controller sees the change through its watch of the Secrets; until it
	// has, a refresh reads the tags with the old password, which is harmless while there is no
	// newer chart to find. The registry tells when the new password is in use.
	testenv.Update(t, mgmt, &corev1.Secret{ObjectMeta: objectMeta(testenv.SystemNamespace, secret)}, func(s *corev1.Secret) {
		s.StringData = map[string]string{credentials.KeyPassword: "not-the-password"}
	})
	testenv.Eventually(t, "the controller reads the tags with the Secret's new password", func() string {
		refresh(t, app)
		statuses := reg.Statuses(tags)
		if statuses[len(statuses)-1] != http.StatusUnauthorized {
			return fmt.Sprintf("the registry answered the tag list with %v", statuses)
		}
		return ""
	})

	// A newer chart that the constraint allows is not deployed: the registry cannot be read.
	if _, err := reg.PushChartFiles("charts", "web", "1.2.0", webChart()); err != nil {
		t.Fatalf("push chart web 1.2.0: %v", err)
	}
	refresh(t, app)
	unauthorized := func(a *navarchv1.Application) bool {
		return containsAll(comparisonError(a), reg.Host(), "unauthorized")
	}
	got := waitForApp(t, app, "ComparisonError naming the registry, unauthorized", unauthorized)
	if msg := comparisonError(got); strings.Contains(msg, "not-the-password") || strings.Contains(msg, "registry-pass") {
		t.Errorf("the ComparisonError shows a password: %s", msg)
	}
	testenv.Consistently(t, 3*time.Second, "the Application stays at chart 1.1.0 with its objects", func() string {
		a := getApp(t, app)
		switch {
		case !unauthorized(a):
			return "the ComparisonError is gone although the registry refuses the credentials: " + describe(a)
		case a.Status.Sync.Revision != "1.1.0":
			return "status.sync.revision moved: " + describe(a)
		case a.Status.OperationState != nil && a.Status.OperationState.SyncResult != nil &&
			a.Status.OperationState.SyncResult.Revision != "1.1.0":
			return "an operation started at another revision: " + describe(a)
		}
		data := configMapData(t, target, "web-config")
		switch {
		case data == nil:
			return "the ConfigMap of chart 1.1.0 was pruned"
		case data["chart"] != "1.1.0":
			return fmt.Sprintf("the ConfigMap shows chart %q, want 1.1.0", data["chart"])
		}
		return ""
	})
}

// A Helm repository with basic auth: the Secret for its URL authenticates every request of
// the controller to it, and nothing of it reaches another server. Another port of the same
// host is another origin: an Application reading a repository there without a Secret of its
// own is refused (401), and a chart URL in the private repository's index that points there
// is downloaded without the private repository's credentials unless passCredentials is set.
// The other server demands the very same credentials, so only the Secret's scope keeps them
// from it.
func TestHelmRepositoryWithBasicAuthSendsCredentialsOnlyToItsHost(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	auth := chartserver.Auth{Username: "navarch-bot", Password: "charts-pass"}
	private := privateChartRepository(t, auth)
	other := privateChartRepository(t, auth)
	for _, r := range []*chartserver.Repository{private, other} {
		addChart(t, r, "1.0.0", webChart())
		addChart(t, r, "1.1.0", webChart())
	}
	// The private index names the archive of web 1.1.0 on the other server: a chart URL on
	// another host.
	elsewhere := other.URL() + other.ArchivePath("web", "1.1.0")
	if err := private.SetChartURL("web", "1.1.0", elsewhere); err != nil {
		t.Fatal(err)
	}
	repositorySecret(t, ns+"-charts", private.URL(), map[string]string{
		credentials.KeyUsername: auth.Username,
		credentials.KeyPassword: auth.Password,
	})
	newApp := func(name, repoURL, version string) *navarchv1.Application {
		return createApp(t, ns, fmt.Sprintf(`
metadata: {name: %s}
spec:
  source: {repoURL: '%s', chart: web, targetRevision: '%s'}
  destination: {name: east, namespace: %s-%s}
  syncPolicy:
    automated: {prune: true}
    syncOptions: [CreateNamespace=true]
`, name, repoURL, version, ns, name))
	}

	app := newApp("web", private.URL(), "1.0.0")
	waitForApp(t, app, "Synced and Healthy at chart 1.0.0", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && a.Status.Sync.Revision == "1.0.0"
	})
	waitForConfigMap(t, ns+"-web", "web-config", map[string]string{"chart": "1.0.0"})
	for _, path := range []string{"/index.yaml", private.ArchivePath("web", "1.0.0")} {
		n, authorized := private.Requests(path), private.AuthorizedRequests(path)
		if n == 0 || authorized != n {
			t.Errorf("the private repository got %d requests for %s, %d of them with credentials: want every one with them (statuses %v)",
				n, path, authorized, private.Statuses(path))
		}
	}

	// The other repository, with no Secret of its own, is read anonymously and refused.
	anonymous := newApp("web-other", other.URL(), "1.0.0")
	got := waitForApp(t, anonymous, "ComparisonError naming the other repository, unauthorized", func(a *navarchv1.Application) bool {
		return containsAll(comparisonError(a), other.URL(), "unauthorized", "401")
	})
	if data := configMapData(t, ns+"-web-other", "web-other-config"); data != nil {
		t.Errorf("applied %v from a repository that refused the controller", data)
	}
	if got.Status.OperationState != nil {
		t.Errorf("an operation ran: %+v", got.Status.OperationState)
	}
	if n := other.Requests("/index.yaml"); n == 0 {
		t.Error("the other repository's index.yaml was never asked for")
	}

	// web 1.1.0 from the private repository is downloaded from the other server, without
	// credentials.
	redirected := newApp("web-elsewhere", private.URL(), "1.1.0")
	waitForApp(t, redirected, "ComparisonError naming the archive on the other server, unauthorized", func(a *navarchv1.Application) bool {
		return containsAll(comparisonError(a), elsewhere, "unauthorized", "passCredentials")
	})
	if data := configMapData(t, ns+"-web-elsewhere", "web-elsewhere-config"); data != nil {
		t.Errorf("applied %v from an archive the other server refused", data)
	}
	if n := other.Requests(other.ArchivePath("web", "1.1.0")); n == 0 {
		t.Error("the archive on the other server was never asked for")
	}
	for _, path := range []string{"/index.yaml", other.ArchivePath("web", "1.0.0"), other.ArchivePath("web", "1.1.0")} {
		if n := other.AuthorizedRequests(path); n != 0 {
			t.Errorf("the other server got the private repository's credentials with %d requests for %s", n, path)
		}
	}

	// passCredentials sends them along, as the user asked.
	testenv.Update(t, mgmt, redirected, func(a *navarchv1.Application) {
		a.Spec.Source.Helm = &navarchv1.ApplicationSourceHelm{PassCredentials: true}
	})
	waitForApp(t, redirected, "Synced and Healthy at chart 1.1.0 with passCredentials", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && a.Status.Sync.Revision == "1.1.0"
	})
	waitForConfigMap(t, ns+"-web-elsewhere", "web-elsewhere-config", map[string]string{"chart": "1.1.0"})
	if n := other.AuthorizedRequests(other.ArchivePath("web", "1.1.0")); n == 0 {
		t.Error("with passCredentials the archive on the other server was still fetched without credentials")
	}
	if n := other.AuthorizedRequests("/index.yaml"); n != 0 {
		t.Errorf("the other repository's own index.yaml got credentials %d times: passCredentials is for chart URLs only", n)
	}
}
