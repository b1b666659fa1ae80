package controller

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/githubserver"
	"github.com/navarch-io/navarch/internal/testenv"
)

const previewToken = "ghp_preview-test-token"

// startGitHub starts a GitHub-compatible server with the repository acme/app, and puts a
// token Secret "gh" (key "token") in ns.
func startGitHub(t *testing.T, ns string) *githubserver.Server {
	t.Helper()
	gh, err := githubserver.Start(githubserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gh.Close() })
	gh.AddToken(previewToken)
	gh.RequireAuth(true)
	gh.AddRepo("acme", "app", githubserver.Repo{DefaultBranch: "main", Branches: map[string]string{"main": strings.Repeat("0", 40)}})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gh"}, StringData: map[string]string{"token": previewToken}}
	if err := env.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	return gh
}

func sha(n int) string { return fmt.Sprintf("%040x", n) }

// previewAppSet is an ApplicationSet "previews" with one Application per open pull request
// of acme/app labelled preview, at requeueAfterSeconds' default of 30 minutes: tests see a
// change by asking for a refresh, as a user would without webhooks.
func previewAppSet(api, extra string) string {
	return fmt.Sprintf(`
metadata: {name: previews}
spec:
  generators:
  - pullRequest:
      github: {owner: acme, repo: app, api: %q, tokenRef: {secretName: gh, key: token}, labels: [preview]%s}
  template:
    metadata: {name: 'preview-{{number}}'}
    spec:
      source: {repoURL: 'https://git.example/app.git', targetRevision: '{{head_sha}}', path: deploy}
      destination: {name: in-cluster, namespace: 'preview-{{number}}'}
`, api, extra)
}

// A preview per open pull request, from the pull request being opened to its Application
// being deleted when it closes or loses its label; GitHub failing in any way deletes nothing.
func TestPullRequestPreviewsFollowOpenPullRequests(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	gh := startGitHub(t, ns)
	gh.OpenPR("acme", "app", githubserver.PullRequest{Title: "Add login", Head: "feature/login", Base: "main", HeadSHA: sha(1), Author: "ana", Labels: []string{"preview"}})
	gh.OpenPR("acme", "app", githubserver.PullRequest{Title: "Docs", Head: "docs", Base: "main", HeadSHA: sha(2), Author: "bo"})
	set := applyAppSet(t, ns, previewAppSet(gh.APIURL(), ""))

	apps := waitForApps(t, ns, "preview-1")
	app := apps["preview-1"]
	if got := app.Spec.Source.TargetRevision; got != sha(1) {
		t.Errorf("preview-1 targets %q, want the head commit %s", got, sha(1))
	}
	if got := app.Annotations[navarchv1.AnnotationPullRequest]; got != "acme/app#1@"+sha(1) {
		t.Errorf("annotation %s = %q", navarchv1.AnnotationPullRequest, got)
	}

	// A push to the pull request moves its preview to the new commit.
	gh.PushPR("acme", "app", 1, sha(11))
	refresh(t, set)
	testenv.Eventually(t, "preview-1 at the pushed commit", func() string {
		if got := listApps(t, ns)["preview-1"].Spec.Source.TargetRevision; got != sha(11) {
			return "targetRevision is " + got
		}
		return ""
	})
	gh.OpenPR("acme", "app", githubserver.PullRequest{Title: "Checkout", Head: "checkout", Base: "main", HeadSHA: sha(3), Author: "cy", Labels: []string{"preview", "team-a"}})
	refresh(t, set)
	waitForApps(t, ns, "preview-1,preview-3")
	waitForCondition(t, ns, "previews", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")

	// GitHub failing, whatever the way, deletes nothing and says what happened.
	faults := []struct {
		name    string
		breakIt func()
		fix     func()
		says    string
	}{
		{"server errors", func() { gh.Fail(http.StatusInternalServerError) }, func() { gh.Fail(0) }, "500"},
		{"secondary rate limit", func() { gh.SecondaryLimit(http.StatusTooManyRequests, 3*time.Second) }, func() {}, "secondary rate limit"},
		{"bad token", func() { setToken(t, ns, "ghp_revoked") }, func() { setToken(t, ns, previewToken) }, "the token in Secret " + ns + "/gh key token"},
		{"exhausted rate limit", func() { gh.SetRateLimit(5000, 0, time.Now().Add(3*time.Second)) }, func() {}, "is exhausted until"},
	}
	for _, f := range faults {
		f.breakIt()
		// Without its label, preview-3 would be deleted if GitHub answered.
		gh.EditPR("acme", "app", 3, func(pr *githubserver.PullRequest) { pr.Labels = []string{"team-a"} })
		refresh(t, set)
		testenv.Eventually(t, f.name+": the ErrorOccurred condition says "+f.says, func() string {
			c := meta.FindStatusCondition(getAppSet(t, ns, "previews").Status.Conditions, navarchv1.ApplicationSetErrorOccurred)
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != navarchv1.ReasonGeneratorError || !strings.Contains(c.Message, f.says) {
				return fmt.Sprintf("ErrorOccurred is %+v", c)
			}
			if strings.Contains(c.Message, "ghp_") {
				t.Fatalf("the condition reveals a token: %s", c.Message)
			}
			return ""
		})
		testenv.Consistently(t, 2*time.Second, f.name+": no Application is deleted", func() string {
			if got := appNames(listApps(t, ns)); got != "preview-1,preview-3" {
				return "Applications are " + got
			}
			return ""
		})
		f.fix()
		gh.EditPR("acme", "app", 3, func(pr *githubserver.PullRequest) { pr.Labels = []string{"preview", "team-a"} })
	}

	// The error clears once GitHub answers again (the limits above end by themselves).
	testenv.Eventually(t, "GitHub answers again", func() string {
		refresh(t, set)
		c := meta.FindStatusCondition(getAppSet(t, ns, "previews").Status.Conditions, navarchv1.ApplicationSetErrorOccurred)
		if c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Sprintf("ErrorOccurred is %+v", c)
		}
		return ""
	})

	// Closing a pull request, or removing its label, removes its preview.
	gh.ClosePR("acme", "app", 1, true)
	gh.EditPR("acme", "app", 3, func(pr *githubserver.PullRequest) { pr.Labels = []string{"team-a"} })
	refresh(t, set)
	waitForApps(t, ns, "")
}

func setToken(t *testing.T, ns, token string) {
	t.Helper()
	secret := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "gh"}, secret); err != nil {
		t.Fatal(err)
	}
	testenv.Update(t, env.Client, secret, func(s *corev1.Secret) { s.Data = map[string][]byte{"token": []byte(token)} })
}

// Refreshing an unchanged repository costs no rate limit: every listing after the first is a
// conditional request answered 304 Not Modified.
func TestUnchangedPullRequestsCostNoRateLimit(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	gh := startGitHub(t, ns)
	gh.OpenPR("acme", "app", githubserver.PullRequest{Title: "a", Head: "a", Base: "main", HeadSHA: sha(1), Author: "ana", Labels: []string{"preview"}})
	set := applyAppSet(t, ns, previewAppSet(gh.APIURL(), ""))
	waitForApps(t, ns, "preview-1")
	for range 9 {
		refresh(t, set)
	}
	var listings []githubserver.Request
	testenv.Eventually(t, "10 listings", func() string {
		listings = listings[:0]
		for _, r := range gh.Requests() {
			if strings.HasSuffix(r.Path, "/repos/acme/app/pulls") {
				listings = append(listings, r)
			}
		}
		if len(listings) < 10 {
			return fmt.Sprintf("%d listings", len(listings))
		}
		return ""
	})
	for i, r := range listings[1:] {
		if r.Status != http.StatusNotModified {
			t.Errorf("listing %d answered %d, want 304 Not Modified", i+2, r.Status)
		}
	}
	if listings[0].Status != http.StatusOK {
		t.Errorf("the first listing answered %d", listings[0].Status)
	}
}

// A low rate limit is said in a condition, and clears when the limit has room again.
func TestALowRateLimitIsReported(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	gh := startGitHub(t, ns)
	gh.SetRateLimit(5000, 120, time.Now().Add(time.Hour))
	set := applyAppSet(t, ns, previewAppSet(gh.APIURL(), ""))
	cond := waitForCondition(t, ns, "previews", navarchv1.ApplicationSetRateLimited, metav1.ConditionTrue, navarchv1.ReasonRateLimitLow)
	if !strings.Contains(cond.Message, "is low (119 of 5000 left") || !strings.Contains(cond.Message, "Secret "+ns+"/gh key token") {
		t.Errorf("the condition says %q", cond.Message)
	}
	gh.SetRateLimit(5000, 4000, time.Now().Add(time.Hour))
	refresh(t, set)
	waitForCondition(t, ns, "previews", navarchv1.ApplicationSetRateLimited, metav1.ConditionFalse, navarchv1.ReasonRateLimitOK)
}

// With commitStatus, each preview reports its state on its pull request's head commit. The
// Application controller does not run in these tests: the test writes the Application status
// it would write.
func TestPreviewsReportCommitStatuses(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	gh := startGitHub(t, ns)
	gh.OpenPR("acme", "app", githubserver.PullRequest{Title: "a", Head: "a", Base: "main", HeadSHA: sha(1), Author: "ana", Labels: []string{"preview"}})
	applyAppSet(t, ns, previewAppSet(gh.APIURL(), ", commitStatus: {context: ci/preview, targetURL: 'http://preview.example'}"))
	waitForApps(t, ns, "preview-1")

	wantStatus := func(state, phrase string) {
		t.Helper()
		testenv.Eventually(t, "commit status "+state, func() string {
			statuses := gh.Statuses("acme", "app", sha(1))
			if len(statuses) == 0 {
				return "no commit status"
			}
			last := statuses[len(statuses)-1]
			if last.State != state || !strings.Contains(last.Description, phrase) || last.Context != "ci/preview/preview-1" || last.TargetURL != "http://preview.example" {
				return fmt.Sprintf("the last status is %+v", last)
			}
			return ""
		})
	}
	wantStatus("pending", "Waiting for "+sha(1)[:8])

	setAppStatus := func(edit func(*navarchv1.ApplicationStatus)) {
		t.Helper()
		app := &navarchv1.Application{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "preview-1"}, app); err != nil {
			t.Fatal(err)
		}
		edit(&app.Status)
		if err := env.Client.Status().Update(context.Background(), app); err != nil {
			t.Fatal(err)
		}
	}
	setAppStatus(func(s *navarchv1.ApplicationStatus) {
		s.Sync = navarchv1.SyncStatus{Status: navarchv1.SyncStatusSynced, Revision: sha(1)}
		s.Health = navarchv1.HealthStatus{Status: navarchv1.HealthProgressing}
	})
	wantStatus("pending", "Synced and Progressing")
	setAppStatus(func(s *navarchv1.ApplicationStatus) {
		s.Health = navarchv1.HealthStatus{Status: navarchv1.HealthHealthy}
	})
	wantStatus("success", "Synced and Healthy at "+sha(1)[:8])
	setAppStatus(func(s *navarchv1.ApplicationStatus) {
		s.Health = navarchv1.HealthStatus{Status: navarchv1.HealthDegraded, Message: "Deployment web: 0 of 2 replicas available"}
	})
	wantStatus("failure", "Degraded at "+sha(1)[:8]+": Deployment web")

	// An unchanged state is not written again.
	n := len(gh.Statuses("acme", "app", sha(1)))
	testenv.Consistently(t, 2*time.Second, "no status written twice", func() string {
		if got := len(gh.Statuses("acme", "app", sha(1))); got != n {
			return fmt.Sprintf("%d statuses, was %d", got, n)
		}
		return ""
	})
}

// An scmProvider ApplicationSet generates an Application per repository that its filters keep,
// and follows repositories that appear.
func TestSCMProviderFollowsTheOrganisationsRepositories(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	gh := startGitHub(t, ns) // acme/app has no deploy directory
	gh.AddRepo("acme", "svc-cart", githubserver.Repo{DefaultBranch: "main", Topics: []string{"team-shop"},
		Branches: map[string]string{"main": sha(1)}, Files: map[string][]string{"main": {"deploy/kustomization.yaml"}}})
	gh.AddRepo("acme", "svc-legacy", githubserver.Repo{DefaultBranch: "main",
		Branches: map[string]string{"main": sha(2)}, Files: map[string][]string{"main": {"README.md"}}})
	set := applyAppSet(t, ns, fmt.Sprintf(`
metadata: {name: services}
spec:
  generators:
  - scmProvider:
      cloneProtocol: https
      github: {organization: acme, api: %q, tokenRef: {secretName: gh, key: token}}
      filters: [{repositoryMatch: '^svc-', pathsExist: [deploy]}]
  template:
    metadata: {name: '{{repository}}', annotations: {topics: '{{labels}}'}}
    spec:
      source: {repoURL: '{{url}}', targetRevision: '{{sha}}', path: deploy}
      destination: {name: in-cluster, namespace: '{{repository}}'}
`, gh.APIURL()))
	apps := waitForApps(t, ns, "svc-cart")
	cart := apps["svc-cart"]
	if cart.Spec.Source.TargetRevision != sha(1) || !strings.HasSuffix(cart.Spec.Source.RepoURL, "acme/svc-cart.git") ||
		!strings.HasPrefix(cart.Spec.Source.RepoURL, "http") || cart.Annotations["topics"] != "team-shop" {
		t.Errorf("svc-cart: source %+v, annotations %v", cart.Spec.Source, cart.Annotations)
	}

	gh.AddRepo("acme", "svc-search", githubserver.Repo{DefaultBranch: "trunk",
		Branches: map[string]string{"trunk": sha(3)}, Files: map[string][]string{"trunk": {"deploy/app.yaml"}}})
	refresh(t, set)
	waitForApps(t, ns, "svc-cart,svc-search")
}
