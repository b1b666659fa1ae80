package webhook

import (
	"slices"
	"strings"
	"testing"
)

const pushPayload = `{
  "ref": "refs/heads/main",
  "before": "1111111111111111111111111111111111111111",
  "after": "2222222222222222222222222222222222222222",
  "deleted": false,
  "repository": {
    "name": "Platform", "full_name": "Acme/Platform",
    "owner": {"name": "Acme", "login": "Acme"},
    "clone_url": "https://github.com/Acme/Platform.git",
    "ssh_url": "git@github.com:Acme/Platform.git",
    "git_url": "git://github.com/Acme/Platform.git",
    "html_url": "https://github.com/Acme/Platform",
    "default_branch": "main", "master_branch": "main"
  },
  "commits": [{"id": "2222222222222222222222222222222222222222", "added": ["apps/web/deploy.yaml"]}]
}`

const pullRequestPayload = `{
  "action": "synchronize",
  "number": 42,
  "pull_request": {"number": 42, "head": {"ref": "feature", "sha": "3333333333333333333333333333333333333333"}},
  "repository": {
    "name": "platform", "full_name": "acme/platform", "owner": {"login": "acme"},
    "clone_url": "https://github.com/acme/platform.git", "default_branch": "main"
  }
}`

func TestParsePush(t *testing.T) {
	p, err := ParsePush([]byte(pushPayload))
	if err != nil {
		t.Fatal(err)
	}
	if p.Ref != "refs/heads/main" || p.After != strings.Repeat("2", 40) || p.Deleted {
		t.Errorf("ref, after, deleted = %q, %q, %t", p.Ref, p.After, p.Deleted)
	}
	if got := p.Repository.FullName(); got != "Acme/Platform" {
		t.Errorf("repository %q, want Acme/Platform", got)
	}
	if got, want := p.Repository.Keys(), []string{"github.com/acme/platform"}; !slices.Equal(got, want) {
		t.Errorf("keys %q, want %q", got, want)
	}
	if got, want := p.Revisions(), []string{"main", "HEAD"}; !slices.Equal(got, want) {
		t.Errorf("revisions %q, want %q", got, want)
	}
}

func TestPushRevisions(t *testing.T) {
	for _, tc := range []struct {
		ref, defaultBranch string
		want               []string
	}{
		{"refs/heads/main", "main", []string{"main", "HEAD"}},
		{"refs/heads/feature/x", "main", []string{"feature/x"}},
		{"refs/heads/main", "", []string{"main"}},
		{"refs/tags/v1.0.0", "main", []string{"v1.0.0"}},
		{"refs/pull/1/head", "main", nil},
	} {
		p := &Push{Ref: tc.ref, Repository: Repository{DefaultBranch: tc.defaultBranch}}
		if got := p.Revisions(); !slices.Equal(got, tc.want) {
			t.Errorf("push to %s (default branch %q): revisions %q, want %q", tc.ref, tc.defaultBranch, got, tc.want)
		}
	}
}

func TestParsePullRequest(t *testing.T) {
	p, err := ParsePullRequest([]byte(pullRequestPayload))
	if err != nil {
		t.Fatal(err)
	}
	if p.Action != "synchronize" || p.Number != 42 || p.Repository.Owner != "acme" || p.Repository.Name != "platform" {
		t.Errorf("parsed %+v", p)
	}
	if !p.Relevant() {
		t.Errorf("synchronize is not relevant")
	}
	for action, want := range map[string]bool{
		"opened": true, "reopened": true, "closed": true, "labeled": true, "unlabeled": true, "edited": true,
		"assigned": false, "review_requested": false, "ready_for_review": false,
	} {
		if got := (&PullRequest{Action: action}).Relevant(); got != want {
			t.Errorf("action %s relevant = %t, want %t", action, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		parse func([]byte) error
		body  string
		want  string
	}{
		"push not JSON":         {parsePush, `{`, "push payload"},
		"push without ref":      {parsePush, `{"repository": {"full_name": "a/b"}}`, "ref"},
		"push short ref":        {parsePush, `{"ref": "main", "repository": {"full_name": "a/b"}}`, "full ref name"},
		"push without repo":     {parsePush, `{"ref": "refs/heads/main"}`, "no owner or name"},
		"pull without action":   {parsePull, `{"number": 1, "repository": {"full_name": "a/b"}}`, "no action"},
		"pull without repo":     {parsePull, `{"action": "opened", "number": 1}`, "no owner or name"},
		"pull with a bad field": {parsePull, `{"action": "opened", "number": "one"}`, "pull_request payload"},
	} {
		err := tc.parse([]byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
	// The owner and name may come from owner.login and name instead of full_name.
	p, err := ParsePullRequest([]byte(`{"action": "opened", "repository": {"name": "b", "owner": {"login": "a"}}}`))
	if err != nil || p.Repository.FullName() != "a/b" {
		t.Errorf("repository without full_name: %+v, %v", p, err)
	}
}

func parsePush(b []byte) error { _, err := ParsePush(b); return err }
func parsePull(b []byte) error { _, err := ParsePullRequest(b); return err }
