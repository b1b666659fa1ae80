package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/generators"
	"github.com/navarch-io/navarch/internal/scm"
)

// DefaultCommitStatusContext prefixes the commit statuses of previews (commitStatus.context).
const DefaultCommitStatusContext = "navarch"

// commitStatuses remembers the last commit status written for each Application, so a pass
// writes only what changed. A restarted controller writes each status once more, which GitHub
// takes as the same state again.
type commitStatuses struct {
	written sync.Map // types.UID → string (sha, state and description)
}

// commitStatusSpecs returns the pullRequest generators of set that ask for commit statuses,
// by lower-case "owner/repo", however deep in matrix and merge generators they are.
func commitStatusSpecs(set *navarchv1.ApplicationSet) map[string]*navarchv1.PullRequestGeneratorGithub {
	out := map[string]*navarchv1.PullRequestGeneratorGithub{}
	for _, g := range generatorsOf(&set.Spec) {
		if pr := g.PullRequest; pr != nil && pr.Github != nil && pr.Github.CommitStatus != nil {
			out[strings.ToLower(pr.Github.Owner+"/"+pr.Github.Repo)] = pr.Github
		}
	}
	return out
}

// previewState is the commit status an Application's state stands for: success once it is
// Synced and Healthy at the pull request's head commit, failure when its sync failed or it is
// Degraded, pending otherwise.
func previewState(app *navarchv1.Application, sha string) (state, description string) {
	short := source.ShortRevision(sha)
	st := app.Status
	op := st.OperationState
	// With several sources, the preview is at the commit when one of its sources is.
	at := func(revision string, revisions []string) bool {
		return revision == sha || slices.Contains(revisions, sha)
	}
	switch {
	case op != nil && (op.Phase == navarchv1.OperationFailed || op.Phase == navarchv1.OperationError) &&
		op.SyncResult != nil && at(op.SyncResult.Revision, op.SyncResult.Revisions):
		return "failure", oneLine("Sync failed at " + short + ": " + op.Message)
	case !at(st.Sync.Revision, st.Sync.Revisions):
		return "pending", "Waiting for " + short + " to be synced"
	case st.Health.Status == navarchv1.HealthDegraded:
		return "failure", oneLine("Degraded at " + short + ": " + st.Health.Message)
	case st.Sync.Status == navarchv1.SyncStatusSynced && st.Health.Status == navarchv1.HealthHealthy:
		return "success", "Synced and Healthy at " + short
	}
	return "pending", fmt.Sprintf("%s and %s at %s", orUnknown(string(st.Sync.Status)), orUnknown(string(st.Health.Status)), short)
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}

// oneLine keeps the first line of s within GitHub's 140 characters.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 140 {
		s = string(r[:137]) + "..."
	}
	return s
}

// reportCommitStatuses writes the commit status of every preview Application of set whose
// state changed. It returns whether a write failed, so that the pass is retried.
func (r *ApplicationSetReconciler) reportCommitStatuses(ctx context.Context, set *navarchv1.ApplicationSet, prov *scm.Providers, apps map[string]*navarchv1.Application) (failed bool) {
	specs := commitStatusSpecs(set)
	if len(specs) == 0 || prov == nil {
		return false
	}
	log := ctrl.LoggerFrom(ctx)
	for _, app := range apps {
		ref, ok := app.Annotations[navarchv1.AnnotationPullRequest]
		if !ok {
			continue
		}
		owner, repo, number, sha, err := generators.ParsePullRequestRef(ref)
		if err != nil {
			continue
		}
		gh := specs[strings.ToLower(owner+"/"+repo)]
		if gh == nil {
			continue
		}
		state, description := previewState(app, sha)
		key := sha + "\x00" + state + "\x00" + description
		if last, ok := r.commitStatuses.written.Load(app.UID); ok && last == key {
			continue
		}
		prefix := gh.CommitStatus.Context
		if prefix == "" {
			prefix = DefaultCommitStatusContext
		}
		err = prov.SetCommitStatus(ctx, gh, sha, scm.CommitStatus{
			State: state, Description: description, Context: prefix + "/" + app.Name, TargetURL: gh.CommitStatus.TargetURL,
		})
		if err != nil {
			log.Error(err, "Commit status not written; retrying", "application", klog.KObj(app), "pullRequest", number)
			failed = true
			continue
		}
		log.Info("Wrote commit status", "application", klog.KObj(app), "pullRequest", number, "sha", sha, "state", state)
		r.commitStatuses.written.Store(app.UID, key)
	}
	return failed
}
