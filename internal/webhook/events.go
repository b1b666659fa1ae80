package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The events GitHub names in X-GitHub-Event that the Handler acts on.
const (
	EventPing        = "ping"
	EventPush        = "push"
	EventPullRequest = "pull_request"
)

// pullRequestActions are the pull_request actions that can change what a pullRequest
// generator produces: a pull request appearing or going, its head commit, labels, title or
// base branch. Others (review requests, assignments, comments) are acknowledged and ignored.
var pullRequestActions = []string{"opened", "reopened", "synchronize", "closed", "labeled", "unlabeled", "edited"}

// Event is one delivery the Handler accepted, parsed: exactly one of Push and PullRequest is
// set.
type Event struct {
	// Delivery is GitHub's id of the delivery (X-GitHub-Delivery), for logs.
	Delivery string
	// Name is the event's name: EventPush or EventPullRequest.
	Name string
	// Push is the payload of a push event.
	Push *Push
	// PullRequest is the payload of a pull_request event.
	PullRequest *PullRequest
}

// Repository is the repository an event is about.
type Repository struct {
	// Owner and Name as in owner/name.
	Owner, Name string
	// URLs are the URLs the repository is reached by: HTTPS clone, SSH, git and web.
	URLs []string
	// DefaultBranch is the repository's default branch, which HEAD names.
	DefaultBranch string
}

// FullName is owner/name.
func (r Repository) FullName() string { return r.Owner + "/" + r.Name }

// Keys returns the RepoKey of each of the repository's URLs, without duplicates or empty keys.
func (r Repository) Keys() []string {
	var out []string
	for _, u := range r.URLs {
		if k := RepoKey(u); k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// Push is a push event: a branch or tag moved, appeared or was deleted.
type Push struct {
	Repository Repository
	// Ref is the full name of the ref that moved, e.g. refs/heads/main.
	Ref string
	// After is the commit the ref points to now; all zeros when it was deleted.
	After string
	// Deleted says the ref was deleted.
	Deleted bool
}

// Revisions returns the names an Application's targetRevision has (see Revision) when it
// follows the ref that moved: the branch or tag name, and "HEAD" too when the default branch
// moved.
func (p *Push) Revisions() []string {
	if name, ok := strings.CutPrefix(p.Ref, "refs/heads/"); ok {
		if name == p.Repository.DefaultBranch {
			return []string{name, "HEAD"}
		}
		return []string{name}
	}
	if name, ok := strings.CutPrefix(p.Ref, "refs/tags/"); ok {
		return []string{name}
	}
	return nil
}

// PullRequest is a pull_request event.
type PullRequest struct {
	Repository Repository
	// Action is what happened: opened, synchronize, closed, …
	Action string
	// Number is the pull request's number.
	Number int
}

// repositoryJSON is the part of an event's repository the Handler reads. A push event's
// owner has a name and a login, other events' only a login.
type repositoryJSON struct {
	Name     string `json:"name"`
	FullName string `json:"full_name"`
	Owner    struct {
		Login string `json:"login"`
		Name  string `json:"name"`
	} `json:"owner"`
	CloneURL      string `json:"clone_url"`
	SSHURL        string `json:"ssh_url"`
	GitURL        string `json:"git_url"`
	HTMLURL       string `json:"html_url"`
	DefaultBranch string `json:"default_branch"`
	MasterBranch  string `json:"master_branch"`
}

func (r *repositoryJSON) repository() (Repository, error) {
	owner, name, ok := strings.Cut(r.FullName, "/")
	if !ok {
		owner, name = r.Owner.Login, r.Name
		if owner == "" {
			owner = r.Owner.Name
		}
	}
	if owner == "" || name == "" {
		return Repository{}, errors.New("repository: no owner or name")
	}
	out := Repository{Owner: owner, Name: name, DefaultBranch: r.DefaultBranch}
	if out.DefaultBranch == "" {
		out.DefaultBranch = r.MasterBranch
	}
	for _, u := range []string{r.CloneURL, r.SSHURL, r.GitURL, r.HTMLURL} {
		if u != "" {
			out.URLs = append(out.URLs, u)
		}
	}
	return out, nil
}

// ParsePush reads the payload of a push event.
func ParsePush(body []byte) (*Push, error) {
	var p struct {
		Ref        string         `json:"ref"`
		After      string         `json:"after"`
		Deleted    bool           `json:"deleted"`
		Repository repositoryJSON `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("push payload: %w", err)
	}
	if !strings.HasPrefix(p.Ref, "refs/") {
		return nil, fmt.Errorf("push payload: ref %q is not a full ref name", p.Ref)
	}
	repo, err := p.Repository.repository()
	if err != nil {
		return nil, fmt.Errorf("push payload: %w", err)
	}
	return &Push{Repository: repo, Ref: p.Ref, After: p.After, Deleted: p.Deleted}, nil
}

// ParsePullRequest reads the payload of a pull_request event.
func ParsePullRequest(body []byte) (*PullRequest, error) {
	var p struct {
		Action     string         `json:"action"`
		Number     int            `json:"number"`
		Repository repositoryJSON `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("pull_request payload: %w", err)
	}
	if p.Action == "" {
		return nil, errors.New("pull_request payload: no action")
	}
	repo, err := p.Repository.repository()
	if err != nil {
		return nil, fmt.Errorf("pull_request payload: %w", err)
	}
	return &PullRequest{Repository: repo, Action: p.Action, Number: p.Number}, nil
}

// Relevant says whether the pull request event can change what a pullRequest generator
// produces.
func (p *PullRequest) Relevant() bool { return slices.Contains(pullRequestActions, p.Action) }
