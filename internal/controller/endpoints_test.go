package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/navarch-io/navarch/internal/testenv"
)

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// serviceAccountToken creates a ServiceAccount in ns and returns a token for it.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.Management.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a token for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// TestMetricsNeedAnAuthorizedCaller runs a controller at its default metrics settings: HTTPS,
// and only callers the management cluster authenticates and authorizes for GET /metrics (as
// config/rbac/metrics_reader_role.yaml grants) read the metrics, which name namespaces,
// ApplicationSets and Clusters.
func TestMetricsNeedAnAuthorizedCaller(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	ctx, cancel := context.WithCancel(context.Background())
	addr := freeAddr(t)
	done := make(chan error, 1)
	go func() {
		// Only the Cluster controller: the package's own controller runs the others.
		done <- Run(ctx, Options{Config: env.Management.RESTConfig(), MetricsAddr: addr, ProbeAddr: "0", Controllers: []string{"cluster"}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})

	for _, obj := range readManifests(t, filepath.Join("..", "..", "config", "rbac", "metrics_reader_role.yaml")) {
		if err := env.Client.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	reader := serviceAccountToken(t, ns, "prometheus")
	if err := env.Client.Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "navarch-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
	}); err != nil {
		t.Fatal(err)
	}
	stranger := serviceAccountToken(t, ns, "stranger")

	// The certificate is self-signed: the test checks access control, not the chain.
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
	// Whether the last response came compressed, which Go's transport asks for by itself.
	compressed := false
	get := func(scheme, token string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		compressed = resp.Uncompressed
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	testenv.Eventually(t, "the metrics endpoint serves an authorized caller", func() string {
		code, body := get("https", reader)
		if code != http.StatusOK || !strings.Contains(body, "controller_runtime_reconcile_total") {
			return fmt.Sprintf("GET /metrics with the reader's token: %d %.200s", code, body)
		}
		return ""
	})
	if compressed {
		t.Error("the metrics were served compressed; want them uncompressed (see uncompressed)")
	}
	for who, tc := range map[string]struct {
		token string
		want  int
	}{
		"no token":                            {"", http.StatusUnauthorized},
		"a token the cluster does not accept": {"not-a-token", http.StatusUnauthorized},
		"a caller without the role":           {stranger, http.StatusForbidden},
	} {
		// Twice: the second answer is the remembered one, and must be the same.
		for range 2 {
			if code, body := get("https", tc.token); code != tc.want || strings.Contains(body, "controller_runtime_reconcile_total") {
				t.Errorf("GET /metrics with %s: %d %.200s; want %d", who, code, body, tc.want)
			}
		}
	}
	if code, body := get("http", ""); code == http.StatusOK {
		t.Errorf("plain HTTP served the metrics: %.200s", body)
	}
}

// TestPlainHTTPMetricsOnlyOnLoopback: metrics without authentication may not listen beyond
// the machine.
func TestPlainHTTPMetricsOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{":8080", "0.0.0.0:8080", "10.0.0.1:8080", "[::]:8080"} {
		err := Run(context.Background(), Options{Config: env.Management.RESTConfig(), MetricsAddr: addr, MetricsInsecure: true, ProbeAddr: "0"})
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("plain HTTP metrics on %s: %v; want a refusal naming loopback", addr, err)
		}
	}
}
