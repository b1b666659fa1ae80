package controller

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/gitserver"
	"github.com/navarch-io/navarch/internal/testenv"
)

// authorizedFetches counts the ls-remote requests (info/refs of upload-pack) that a Git
// server answered 200 to a client that logged in as user, from the server's request log.
type authorizedFetches struct {
	user string
	n    atomic.Int64
}

func (a *authorizedFetches) Write(p []byte) (int, error) {
	line := string(p)
	if strings.Contains(line, "/info/refs?service=git-upload-pack 200 user="+a.user+" ") {
		a.n.Add(1)
	}
	return len(p), nil
}

// TestApplicationFetchesWithCredentialsListNoSecrets: the repository credential Secrets are watched, so the
// source fetches of Applications cost no Secret LIST, however many Applications share a
// repository and however often they are refreshed. 50 Applications follow a repository that
// answers only to the credential of a Secret; each is refreshed twice.
func TestApplicationFetchesWithCredentialsListNoSecrets(t *testing.T) {
	const apps, user, password = 50, "fetch-bot", "fetch-token"
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client)

	fetches := &authorizedFetches{user: user}
	private, err := gitserver.Start(gitserver.Options{Root: t.TempDir(), Username: user, Password: password, Log: fetches})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = private.Close() })
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "deploy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "deploy", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commit, err := private.CreateRepo("private", src)
	if err != nil {
		t.Fatal(err)
	}
	repoURL := private.RepoURL("private")
	resp, err := http.Get(repoURL + "/info/refs?service=git-upload-pack") //nolint:noctx // a probe
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the repository answers %d without credentials, want 401: the test would not show that the credential is used", resp.StatusCode)
	}
	createCredentialSecret(t, "fetch-credentials", private.URL(), user, password)

	counter := &writeCounter{}
	cfg := env.Management.RESTConfig()
	cfg.Wrap(counter.wrap)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(runCtx, Options{
			Config: cfg, MetricsAddr: "0", ProbeAddr: "0", Logger: env.Logger,
			Namespaces: []string{ns}, Controllers: []string{"application"},
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})

	var all []*navarchv1.Application
	for i := range apps {
		app := &navarchv1.Application{}
		if err := yaml.UnmarshalStrict(fmt.Appendf(nil, `
metadata: {name: app-%02d, namespace: %s}
spec:
  source: {repoURL: %q, targetRevision: main, path: deploy}
  destination: {name: in-cluster, namespace: %s-target}
`, i, ns, repoURL, ns), app); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		all = append(all, app)
	}
	get := func(app *navarchv1.Application) *navarchv1.Application {
		got := &navarchv1.Application{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	testenv.Eventually(t, "every Application has read the private repository with the credential", func() string {
		for _, app := range all {
			if got := get(app); got.Status.Sync.Revision != commit || got.Status.Sync.Status != navarchv1.SyncStatusOutOfSync {
				return fmt.Sprintf("%s is %s at %q (want OutOfSync at %.8s); conditions %+v",
					got.Name, got.Status.Sync.Status, got.Status.Sync.Revision, commit, got.Status.Conditions)
			}
		}
		return ""
	})
	// The credential cache lists its Secrets once, when it starts, and watches them after.
	if lists := counter.secretLists.Load(); lists > 1 {
		t.Errorf("the controller listed Secrets %d times while %d Applications fetched their source once, want at most 1 (the credential cache's start)", lists, apps)
	}

	before, firstFetches := counter.secretLists.Load(), fetches.n.Load()
	for round := 1; round <= 2; round++ {
		fetched := fetches.n.Load()
		for _, app := range all {
			testenv.Update(t, env.Client, app, func(a *navarchv1.Application) {
				if a.Annotations == nil {
					a.Annotations = map[string]string{}
				}
				a.Annotations[navarchv1.AnnotationRefresh] = time.Now().Format(time.RFC3339Nano)
			})
		}
		testenv.Eventually(t, fmt.Sprintf("refresh %d of every Application is handled", round), func() string {
			for _, app := range all {
				if _, ok := get(app).Annotations[navarchv1.AnnotationRefresh]; ok {
					return app.Name + " still carries the refresh annotation"
				}
			}
			return ""
		})
		if fetched == fetches.n.Load() {
			t.Errorf("refresh %d of %d Applications asked the private repository nothing with the credential", round, apps)
		}
	}
	t.Logf("Secret LISTs: %d at the start, %d during the refreshes; authenticated ls-remotes: %d at the start, %d during the refreshes",
		before, counter.secretLists.Load()-before, firstFetches, fetches.n.Load()-firstFetches)
	if lists := counter.secretLists.Load() - before; lists != 0 {
		t.Errorf("refreshing %d Applications on one private repository twice listed Secrets %d times, want 0 (the credential Secrets are watched)", apps, lists)
	}
}
