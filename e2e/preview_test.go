package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/devfleet"
	"github.com/navarch-io/navarch/internal/testenv"
)

// previewEnvironmentIsCreatedAndTornDown is the pull-request preview story, on the fleet
// `navarch demo` started (its previews ApplicationSet watches navarch/examples of the dev
// fleet's GitHub-compatible server, which delivers webhooks to the controller):
// a pull request labelled preview gets the guestbook in its own namespace on dev-1 and a
// success commit status; a push moves the preview to the new commit; closing the pull request
// deletes the preview, its resources and its namespace.
func previewEnvironmentIsCreatedAndTornDown(t *testing.T, stateDir string, state *devfleet.State) {
	sd := []string{"--state-dir", stateDir}
	mgmt := clientFor(t, state.Management.Kubeconfig)
	var dev1 client.Client
	for _, c := range state.Clusters {
		if c.Name == "dev-1" {
			dev1 = clientFor(t, c.Kubeconfig)
		}
	}
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "demo", Name: "guestbook-pr-1"}

	out := navarch(t, append([]string{"dev", "pr", "open", "--branch", "try-preview", "--label", "preview", "--title", "Try a preview"}, sd...)...)
	if !strings.Contains(out, "Opened pull request #1") {
		t.Fatalf("dev pr open printed:\n%s", out)
	}
	opened := time.Now()
	head := waitForPreview(t, mgmt, key, "")
	t.Logf("the preview was Synced and Healthy %s after the pull request opened", time.Since(opened).Round(100*time.Millisecond))
	if err := dev1.Get(ctx, client.ObjectKey{Namespace: "guestbook-pr-1", Name: "guestbook"}, &appsv1.Deployment{}); err != nil {
		t.Fatalf("the preview's Deployment is not on dev-1: %v", err)
	}
	waitForCommitStatus(t, sd, head, "success")

	out = navarch(t, append([]string{"dev", "pr", "push", "1", "--file", "apps/guestbook/overlays/dev/PREVIEW=second commit"}, sd...)...)
	if !strings.Contains(out, "Pushed") {
		t.Fatalf("dev pr push printed:\n%s", out)
	}
	next := waitForPreview(t, mgmt, key, head)
	waitForCommitStatus(t, sd, next, "success")

	out = navarch(t, append([]string{"dev", "pr", "close", "1"}, sd...)...)
	if !strings.Contains(out, "Closed pull request #1") {
		t.Fatalf("dev pr close printed:\n%s", out)
	}
	testenv.EventuallyWithin(t, 2*time.Minute, "the preview, its Deployment and its namespace are gone", func() string {
		if err := mgmt.Get(ctx, key, &navarchv1.Application{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("Application %s: %v", key, err)
		}
		if err := dev1.Get(ctx, client.ObjectKey{Namespace: "guestbook-pr-1", Name: "guestbook"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("Deployment guestbook-pr-1/guestbook: %v", err)
		}
		if err := dev1.Get(ctx, client.ObjectKey{Name: "guestbook-pr-1"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("namespace guestbook-pr-1: %v", err)
		}
		return ""
	})
}

// waitForPreview waits until the preview Application is Synced and Healthy at the head
// commit of its pull request, once that commit is not old, and returns it.
func waitForPreview(t *testing.T, c client.Client, key client.ObjectKey, old string) string {
	t.Helper()
	var head string
	testenv.EventuallyWithin(t, 2*time.Minute, key.Name+" Synced and Healthy at a new head commit", func() string {
		app := &navarchv1.Application{}
		if err := c.Get(context.Background(), key, app); err != nil {
			return err.Error()
		}
		ref := app.Annotations[navarchv1.AnnotationPullRequest]
		_, head, _ = strings.Cut(ref, "@")
		switch {
		case head == "" || head == old:
			return "the Application is for " + ref
		case app.Status.Sync.Revision != head || app.Status.Sync.Status != navarchv1.SyncStatusSynced || app.Status.Health.Status != navarchv1.HealthHealthy:
			return fmt.Sprintf("%s/%s at %s, want Synced/Healthy at %s", app.Status.Sync.Status, app.Status.Health.Status, app.Status.Sync.Revision, head)
		}
		return ""
	})
	return head
}

// waitForCommitStatus waits until `navarch dev pr status 1` shows the preview's status state
// on the head commit sha.
func waitForCommitStatus(t *testing.T, stateDir []string, sha, state string) {
	t.Helper()
	line := regexp.MustCompile(`(?m)^previews/guestbook-pr-1\s+` + state + `\s`)
	testenv.EventuallyWithin(t, time.Minute, "commit status "+state+" on "+sha[:8], func() string {
		out := navarch(t, append([]string{"dev", "pr", "status", "1"}, stateDir...)...)
		if !strings.Contains(out, sha) || !line.MatchString(out) {
			return "dev pr status printed:\n" + out
		}
		return ""
	})
}
