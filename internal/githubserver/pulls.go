package githubserver

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Pull request states, as GitHub spells them.
const (
	stateOpen   = "open"
	stateClosed = "closed"
)

// PullRequest describes a pull request opened with [Server.OpenPR]; head and
// base are branches of the same repository.
type PullRequest struct {
	// Title is the title.
	Title string `json:"title"`
	// Head is the branch with the changes. Required.
	Head string `json:"head"`
	// Base is the branch the changes go into; empty means the default branch.
	Base string `json:"base,omitempty"`
	// HeadSHA is the head commit; empty means the head branch's, or a
	// made-up one if the repository has no such branch.
	HeadSHA string `json:"head_sha,omitempty"`
	// Author is the login of the user who opened it; empty means octocat.
	Author string `json:"author,omitempty"`
	// Labels are the names of its labels.
	Labels []string `json:"labels,omitempty"`
}

// pull is a pull request and its lifecycle.
type pull struct {
	PullRequest
	id       int64
	number   int
	state    string
	merged   bool
	created  time.Time
	updated  time.Time
	closed   time.Time
	mergedAt time.Time
	mergeSHA string
}

// OpenPR opens a pull request in owner/repo, delivers the `pull_request`
// webhook (action opened) to the repository's hooks and returns its number:
// 1, 2, ... per repository. It panics if the repository was never added or
// pr has no Head, a bug in the caller.
func (s *Server) OpenPR(owner, repo string, pr PullRequest) int {
	number, out, err := s.openPR(owner, repo, pr)
	if err != nil {
		panic(fmt.Sprintf("githubserver: OpenPR: %v", err))
	}
	s.deliverAll(out)
	return number
}

// PushPR moves the head of an open pull request (and its head branch) to
// sha and delivers `pull_request` with action synchronize. It panics if the
// pull request does not exist or is closed.
func (s *Server) PushPR(owner, repo string, number int, sha string) {
	out, err := s.pushPR(owner, repo, number, sha)
	if err != nil {
		panic(fmt.Sprintf("githubserver: PushPR: %v", err))
	}
	s.deliverAll(out)
}

// EditPR lets edit change a pull request's Title, Base, Labels or HeadSHA
// (Head and Author stay as they were), then delivers what GitHub would:
// `pull_request` with action edited for a new title or base, unlabeled and
// labeled for each label removed and added, synchronize for a new head
// commit. It panics if the pull request does not exist.
func (s *Server) EditPR(owner, repo string, number int, edit func(*PullRequest)) {
	out, err := s.editPR(owner, repo, number, func(pr *PullRequest) error {
		edit(pr)
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("githubserver: EditPR: %v", err))
	}
	s.deliverAll(out)
}

// ClosePR closes an open pull request, merged or not, and delivers
// `pull_request` with action closed. Closing a closed pull request does
// nothing. It panics if the pull request does not exist.
func (s *Server) ClosePR(owner, repo string, number int, merged bool) {
	out, err := s.closePR(owner, repo, number, merged)
	if err != nil {
		panic(fmt.Sprintf("githubserver: ClosePR: %v", err))
	}
	s.deliverAll(out)
}

// openPR opens a pull request and returns the webhooks to deliver.
func (s *Server) openPR(owner, repoName string, pr PullRequest) (int, []outgoing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return 0, nil, err
	}
	if pr.Head == "" {
		return 0, nil, fmt.Errorf("pull request in %s: head: %w: required", rp.fullName(), errInvalid)
	}
	pr.Base = cmp.Or(pr.Base, rp.spec.DefaultBranch)
	pr.Author = cmp.Or(pr.Author, defaultLogin)
	pr.Labels = uniqueLabels(pr.Labels)
	if pr.HeadSHA == "" {
		pr.HeadSHA = cmp.Or(rp.spec.Branches[pr.Head], fakeSHA(rp.fullName(), pr.Head, strconv.Itoa(len(rp.pulls)+1)))
	}
	now := time.Now()
	s.nextID++
	p := &pull{
		PullRequest: pr,
		id:          s.nextID,
		number:      len(rp.pulls) + 1,
		state:       stateOpen,
		created:     now,
		updated:     now,
	}
	rp.pulls = append(rp.pulls, p)
	rp.updated = now
	ev := s.pullEventLocked(rp, p, "opened", pr.Author)
	return p.number, s.hookDeliveriesLocked(rp, eventPullRequest, ev.Action, ev), nil
}

// pullLocked finds pull request number of a repository. s.mu must be held.
func (s *Server) pullLocked(owner, repoName string, number int) (*repo, *pull, error) {
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return nil, nil, err
	}
	if number < 1 || number > len(rp.pulls) {
		return nil, nil, fmt.Errorf("pull request %s#%d: %w", rp.fullName(), number, ErrNotFound)
	}
	return rp, rp.pulls[number-1], nil
}

// pushPR moves an open pull request's head and returns the webhooks to
// deliver.
func (s *Server) pushPR(owner, repoName string, number int, sha string) ([]outgoing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, p, err := s.pullLocked(owner, repoName, number)
	if err != nil {
		return nil, err
	}
	if p.state != stateOpen {
		return nil, fmt.Errorf("pull request %s#%d: %w: it is closed", rp.fullName(), number, errInvalid)
	}
	if sha == "" {
		return nil, fmt.Errorf("pull request %s#%d: sha: %w: required", rp.fullName(), number, errInvalid)
	}
	if _, ok := rp.spec.Branches[p.Head]; ok {
		rp.spec.Branches[p.Head] = sha
		rp.pushed = time.Now()
	}
	return s.synchronizeLocked(rp, p, sha, p.Author), nil
}

// synchronizeLocked moves a pull request's head commit and returns the
// synchronize webhooks, none if the head does not move. s.mu must be held.
func (s *Server) synchronizeLocked(rp *repo, p *pull, sha, sender string) []outgoing {
	before := p.HeadSHA
	if before == sha {
		return nil
	}
	p.HeadSHA = sha
	p.updated = time.Now()
	rp.updated = p.updated
	ev := s.pullEventLocked(rp, p, "synchronize", sender)
	ev.Before, ev.After = before, sha
	return s.hookDeliveriesLocked(rp, eventPullRequest, ev.Action, ev)
}

// editPR applies an edit step by step, as GitHub would record it, and
// returns the webhooks of each step.
func (s *Server) editPR(owner, repoName string, number int, edit func(*PullRequest) error) ([]outgoing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, p, err := s.pullLocked(owner, repoName, number)
	if err != nil {
		return nil, err
	}
	want := p.PullRequest
	want.Labels = slices.Clone(p.Labels)
	if err := edit(&want); err != nil {
		return nil, err
	}
	want.Base = cmp.Or(want.Base, p.Base)
	want.Labels = uniqueLabels(want.Labels)
	sender := p.Author
	var out []outgoing
	touch := func() {
		p.updated = time.Now()
		rp.updated = p.updated
	}

	if want.Title != p.Title || want.Base != p.Base {
		changes := &changesJSON{}
		if want.Title != p.Title {
			changes.Title = &fromJSON{From: p.Title}
		}
		if want.Base != p.Base {
			changes.Base = &baseChangeJSON{Ref: fromJSON{From: p.Base}, SHA: fromJSON{From: rp.spec.Branches[p.Base]}}
		}
		p.Title, p.Base = want.Title, want.Base
		touch()
		ev := s.pullEventLocked(rp, p, "edited", sender)
		ev.Changes = changes
		out = append(out, s.hookDeliveriesLocked(rp, eventPullRequest, ev.Action, ev)...)
	}
	for _, name := range slices.Clone(p.Labels) {
		if slices.Contains(want.Labels, name) {
			continue
		}
		p.Labels = slices.DeleteFunc(slices.Clone(p.Labels), func(l string) bool { return l == name })
		touch()
		ev := s.pullEventLocked(rp, p, "unlabeled", sender)
		label := s.labelJSON(rp, name)
		ev.Label = &label
		out = append(out, s.hookDeliveriesLocked(rp, eventPullRequest, ev.Action, ev)...)
	}
	for _, name := range want.Labels {
		if slices.Contains(p.Labels, name) {
			continue
		}
		p.Labels = append(slices.Clone(p.Labels), name)
		touch()
		ev := s.pullEventLocked(rp, p, "labeled", sender)
		label := s.labelJSON(rp, name)
		ev.Label = &label
		out = append(out, s.hookDeliveriesLocked(rp, eventPullRequest, ev.Action, ev)...)
	}
	if want.HeadSHA != "" && p.state == stateOpen {
		out = append(out, s.synchronizeLocked(rp, p, want.HeadSHA, sender)...)
	}
	return out, nil
}

// closePR closes a pull request and returns the webhooks to deliver.
func (s *Server) closePR(owner, repoName string, number int, merged bool) ([]outgoing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, p, err := s.pullLocked(owner, repoName, number)
	if err != nil {
		return nil, err
	}
	if p.state != stateOpen {
		return nil, nil
	}
	now := time.Now()
	p.state = stateClosed
	p.closed, p.updated, rp.updated = now, now, now
	if merged {
		p.merged = true
		p.mergedAt = now
		p.mergeSHA = fakeSHA(rp.fullName(), "merge", strconv.Itoa(p.number), p.HeadSHA)
	}
	ev := s.pullEventLocked(rp, p, "closed", p.Author)
	return s.hookDeliveriesLocked(rp, eventPullRequest, ev.Action, ev), nil
}

// uniqueLabels drops empty and repeated label names, keeping the order.
func uniqueLabels(labels []string) []string {
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		if l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// labelJSON is GitHub's label representation.
type labelJSON struct {
	ID          int64   `json:"id"`
	NodeID      string  `json:"node_id"`
	URL         string  `json:"url"`
	Name        string  `json:"name"`
	Color       string  `json:"color"`
	Default     bool    `json:"default"`
	Description *string `json:"description"`
}

// labelJSON renders a label of a repository, with an ID and colour derived
// from its name.
func (s *Server) labelJSON(rp *repo, name string) labelJSON {
	h := fnv.New32a()
	h.Write([]byte(rp.fullName() + "\x00" + name))
	sum := h.Sum32()
	id := int64(sum&0x7fffffff) + 1
	return labelJSON{
		ID:     id,
		NodeID: nodeID("Label", id),
		URL:    s.url + apiPrefix + "/repos/" + rp.fullName() + "/labels/" + url.PathEscape(name),
		Name:   name,
		Color:  fmt.Sprintf("%06x", sum&0xffffff),
	}
}

// pullRefJSON is the head or base of a pull request.
type pullRefJSON struct {
	Label string   `json:"label"`
	Ref   string   `json:"ref"`
	SHA   string   `json:"sha"`
	User  userJSON `json:"user"`
	Repo  repoJSON `json:"repo"`
}

// pullJSON is GitHub's pull request representation.
type pullJSON struct {
	URL                string      `json:"url"`
	ID                 int64       `json:"id"`
	NodeID             string      `json:"node_id"`
	HTMLURL            string      `json:"html_url"`
	DiffURL            string      `json:"diff_url"`
	PatchURL           string      `json:"patch_url"`
	IssueURL           string      `json:"issue_url"`
	CommitsURL         string      `json:"commits_url"`
	StatusesURL        string      `json:"statuses_url"`
	Number             int         `json:"number"`
	State              string      `json:"state"`
	Locked             bool        `json:"locked"`
	Title              string      `json:"title"`
	User               userJSON    `json:"user"`
	Body               *string     `json:"body"`
	Labels             []labelJSON `json:"labels"`
	CreatedAt          timestamp   `json:"created_at"`
	UpdatedAt          timestamp   `json:"updated_at"`
	ClosedAt           timestamp   `json:"closed_at"`
	MergedAt           timestamp   `json:"merged_at"`
	MergeCommitSHA     *string     `json:"merge_commit_sha"`
	Assignee           *userJSON   `json:"assignee"`
	Assignees          []userJSON  `json:"assignees"`
	RequestedReviewers []userJSON  `json:"requested_reviewers"`
	Draft              bool        `json:"draft"`
	Head               pullRefJSON `json:"head"`
	Base               pullRefJSON `json:"base"`
	AuthorAssociation  string      `json:"author_association"`
	Merged             bool        `json:"merged"`
}

// pullJSONLocked renders a pull request. s.mu must be held.
func (s *Server) pullJSONLocked(rp *repo, p *pull, c caller) pullJSON {
	api := s.url + apiPrefix + "/repos/" + rp.fullName()
	html := s.url + "/" + rp.fullName() + "/pull/" + strconv.Itoa(p.number)
	repoJ := s.repoJSONLocked(rp, c)
	owner := s.user(rp.owner)
	labels := make([]labelJSON, 0, len(p.Labels))
	for _, name := range p.Labels {
		labels = append(labels, s.labelJSON(rp, name))
	}
	var mergeSHA *string
	if p.mergeSHA != "" {
		sha := p.mergeSHA
		mergeSHA = &sha
	}
	association := "CONTRIBUTOR"
	if strings.EqualFold(p.Author, rp.owner) {
		association = "OWNER"
	}
	return pullJSON{
		URL:                api + "/pulls/" + strconv.Itoa(p.number),
		ID:                 p.id,
		NodeID:             nodeID("PullRequest", p.id),
		HTMLURL:            html,
		DiffURL:            html + ".diff",
		PatchURL:           html + ".patch",
		IssueURL:           api + "/issues/" + strconv.Itoa(p.number),
		CommitsURL:         api + "/pulls/" + strconv.Itoa(p.number) + "/commits",
		StatusesURL:        api + "/statuses/" + p.HeadSHA,
		Number:             p.number,
		State:              p.state,
		Title:              p.Title,
		User:               s.user(p.Author),
		Labels:             labels,
		CreatedAt:          timestamp(p.created),
		UpdatedAt:          timestamp(p.updated),
		ClosedAt:           timestamp(p.closed),
		MergedAt:           timestamp(p.mergedAt),
		MergeCommitSHA:     mergeSHA,
		Assignees:          []userJSON{},
		RequestedReviewers: []userJSON{},
		Head:               pullRefJSON{Label: rp.owner + ":" + p.Head, Ref: p.Head, SHA: p.HeadSHA, User: owner, Repo: repoJ},
		Base:               pullRefJSON{Label: rp.owner + ":" + p.Base, Ref: p.Base, SHA: rp.spec.Branches[p.Base], User: owner, Repo: repoJ},
		AuthorAssociation:  association,
		Merged:             p.merged,
	}
}

// listPulls serves GET /repos/{owner}/{repo}/pulls: state (open, closed,
// all; default open), head (OWNER:BRANCH), base, sort (created, updated,
// popularity, long-running) and direction (desc by default for created,
// asc otherwise), paginated.
func (s *Server) listPulls(r *http.Request, c caller) reply {
	q := r.URL.Query()
	state := cmp.Or(q.Get("state"), stateOpen)
	if state != stateOpen && state != stateClosed && state != "all" {
		return validationReply("PullRequest", "state", messageStateInvalid)
	}
	sortBy := cmp.Or(q.Get("sort"), "created")
	direction := q.Get("direction")
	if direction == "" {
		direction = "asc"
		if sortBy == "created" {
			direction = "desc"
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	rp, denied := s.visibleRepoLocked(r, c)
	if denied != nil {
		return *denied
	}
	var pulls []*pull
	for _, p := range rp.pulls {
		if state != "all" && p.state != state {
			continue
		}
		if head := q.Get("head"); head != "" {
			owner, ref, ok := strings.Cut(head, ":")
			if !ok || !strings.EqualFold(owner, rp.owner) || ref != p.Head {
				continue
			}
		}
		if base := q.Get("base"); base != "" && base != p.Base {
			continue
		}
		pulls = append(pulls, p)
	}
	slices.SortStableFunc(pulls, func(a, b *pull) int {
		n := cmp.Compare(a.number, b.number)
		if sortBy == "updated" || sortBy == "long-running" {
			n = cmp.Or(a.updated.Compare(b.updated), n)
		}
		if direction == "desc" {
			n = -n
		}
		return n
	})
	page, header := paginate(r, pulls)
	body := make([]pullJSON, 0, len(page))
	for _, p := range page {
		body = append(body, s.pullJSONLocked(rp, p, c))
	}
	return reply{status: http.StatusOK, body: body, header: header}
}

// getPull serves GET /repos/{owner}/{repo}/pulls/{number}.
func (s *Server) getPull(r *http.Request, c caller) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, denied := s.visibleRepoLocked(r, c)
	if denied != nil {
		return *denied
	}
	number, err := strconv.Atoi(r.PathValue("number"))
	if err != nil || number < 1 || number > len(rp.pulls) {
		return notFoundReply()
	}
	return reply{status: http.StatusOK, body: s.pullJSONLocked(rp, rp.pulls[number-1], c)}
}
