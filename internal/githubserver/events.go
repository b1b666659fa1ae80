package githubserver

import (
	"strings"
	"time"
)

// pullRequestEventJSON is the payload of a `pull_request` webhook.
type pullRequestEventJSON struct {
	Action      string       `json:"action"`
	Number      int          `json:"number"`
	Changes     *changesJSON `json:"changes,omitempty"`
	Before      string       `json:"before,omitempty"`
	After       string       `json:"after,omitempty"`
	PullRequest pullJSON     `json:"pull_request"`
	Label       *labelJSON   `json:"label,omitempty"`
	Repository  repoJSON     `json:"repository"`
	Sender      userJSON     `json:"sender"`
}

// changesJSON is what an edited event changed.
type changesJSON struct {
	Title *fromJSON       `json:"title,omitempty"`
	Base  *baseChangeJSON `json:"base,omitempty"`
}

// fromJSON is the previous value of a changed field.
type fromJSON struct {
	From string `json:"from"`
}

// baseChangeJSON is the previous base of a pull request.
type baseChangeJSON struct {
	Ref fromJSON `json:"ref"`
	SHA fromJSON `json:"sha"`
}

// pullEventLocked builds a `pull_request` payload for the current state of a
// pull request. s.mu must be held.
func (s *Server) pullEventLocked(rp *repo, p *pull, action, sender string) *pullRequestEventJSON {
	return &pullRequestEventJSON{
		Action:      action,
		Number:      p.number,
		PullRequest: s.pullJSONLocked(rp, p, caller{}),
		Repository:  s.repoJSONLocked(rp, caller{}),
		Sender:      s.user(sender),
	}
}

// pushEventJSON is the payload of a `push` webhook.
type pushEventJSON struct {
	Ref        string        `json:"ref"`
	Before     string        `json:"before"`
	After      string        `json:"after"`
	Repository pushRepoJSON  `json:"repository"`
	Pusher     committerJSON `json:"pusher"`
	Sender     userJSON      `json:"sender"`
	Created    bool          `json:"created"`
	Deleted    bool          `json:"deleted"`
	Forced     bool          `json:"forced"`
	BaseRef    *string       `json:"base_ref"`
	Compare    string        `json:"compare"`
	Commits    []commitJSON  `json:"commits"`
	HeadCommit *commitJSON   `json:"head_commit"`
}

// pushRepoJSON is the repository of a push event, which differs from the
// REST one: its owner has a name and email, and its times are Unix seconds.
type pushRepoJSON struct {
	repoJSON
	Owner        pushOwnerJSON `json:"owner"`
	CreatedAt    int64         `json:"created_at"`
	PushedAt     int64         `json:"pushed_at"`
	MasterBranch string        `json:"master_branch"`
}

// pushOwnerJSON is the owner of a push event's repository.
type pushOwnerJSON struct {
	userJSON
	Name  string  `json:"name"`
	Email *string `json:"email"`
}

// committerJSON is a Git author, committer or pusher.
type committerJSON struct {
	Name     string `json:"name"`
	Email    string `json:"email"`
	Username string `json:"username,omitempty"`
}

// commitJSON is a commit of a push event.
type commitJSON struct {
	ID        string        `json:"id"`
	TreeID    string        `json:"tree_id"`
	Distinct  bool          `json:"distinct"`
	Message   string        `json:"message"`
	Timestamp timestamp     `json:"timestamp"`
	URL       string        `json:"url"`
	Author    committerJSON `json:"author"`
	Committer committerJSON `json:"committer"`
	Added     []string      `json:"added"`
	Removed   []string      `json:"removed"`
	Modified  []string      `json:"modified"`
}

// pushEventLocked builds a `push` payload for a branch that moved from
// before to after (the zero SHA for a created or deleted branch). The pusher
// is octocat. s.mu must be held.
func (s *Server) pushEventLocked(rp *repo, branch, before, after string, now time.Time) *pushEventJSON {
	html := s.url + "/" + rp.fullName()
	pusher := committerJSON{Name: defaultLogin, Email: defaultLogin + "@users.noreply.github.com", Username: defaultLogin}
	ev := &pushEventJSON{
		Ref:    "refs/heads/" + branch,
		Before: before,
		After:  after,
		Repository: pushRepoJSON{
			repoJSON:     s.repoJSONLocked(rp, caller{}),
			Owner:        pushOwnerJSON{userJSON: s.user(rp.owner), Name: rp.owner},
			CreatedAt:    rp.created.Unix(),
			PushedAt:     rp.pushed.Unix(),
			MasterBranch: rp.spec.DefaultBranch,
		},
		Pusher:  committerJSON{Name: pusher.Name, Email: pusher.Email},
		Sender:  s.user(defaultLogin),
		Created: before == zeroSHA,
		Deleted: after == zeroSHA,
		Compare: html + "/compare/" + shortSHA(before) + "..." + shortSHA(after),
		Commits: []commitJSON{},
	}
	if !ev.Deleted {
		head := commitJSON{
			ID:        after,
			TreeID:    fakeSHA(rp.fullName(), "tree", after),
			Distinct:  true,
			Message:   "Push to " + branch,
			Timestamp: timestamp(now),
			URL:       html + "/commit/" + after,
			Author:    pusher,
			Committer: pusher,
			Added:     []string{},
			Removed:   []string{},
			Modified:  []string{},
		}
		ev.Commits = append(ev.Commits, head)
		ev.HeadCommit = &head
	}
	return ev
}

// shortSHA abbreviates a commit SHA as GitHub's compare links do.
func shortSHA(sha string) string {
	if len(sha) > 12 {
		return strings.ToLower(sha[:12])
	}
	return sha
}
