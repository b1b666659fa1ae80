package githubserver

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// defaultBranch is the default branch of a repository that names none.
const defaultBranch = "main"

// Repo describes a repository added with [Server.AddRepo]. The server holds
// no Git data: branches are names with head commits, files are paths that
// exist (with empty content).
type Repo struct {
	// DefaultBranch is the default branch; empty means "main". It always
	// exists: it is added to Branches if missing.
	DefaultBranch string `json:"default_branch,omitempty"`
	// Topics are the repository's topics.
	Topics []string `json:"topics,omitempty"`
	// Branches maps each branch name to its head commit SHA.
	Branches map[string]string `json:"branches,omitempty"`
	// Files maps a branch name to the slash-separated paths of the files on
	// it; their parent directories exist too.
	Files map[string][]string `json:"files,omitempty"`
	// Private hides the repository from anonymous callers, who get 404.
	Private bool `json:"private,omitempty"`
	// Archived marks the repository archived.
	Archived bool `json:"archived,omitempty"`
	// CloneURL overrides clone_url, e.g. to point at a local Git server;
	// empty means URL()/OWNER/NAME.git.
	CloneURL string `json:"clone_url,omitempty"`
}

// repo is a repository and everything the server keeps about it.
type repo struct {
	id          int64
	owner, name string
	spec        Repo
	created     time.Time
	updated     time.Time
	pushed      time.Time
	pulls       []*pull             // pull request N is pulls[N-1]
	statuses    map[string][]status // by commit SHA, oldest first
	hooks       []hook
}

// repoKey is a repository's key in Server.repos: GitHub's names are
// case-insensitive.
func repoKey(owner, name string) string { return strings.ToLower(owner + "/" + name) }

// fullName is OWNER/NAME.
func (rp *repo) fullName() string { return rp.owner + "/" + rp.name }

// AddRepo adds the repository owner/name, or replaces the description
// (branches, files, topics, visibility) of an existing one while keeping its
// pull requests, statuses and hooks.
func (s *Server) AddRepo(owner, name string, r Repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addRepoLocked(owner, name, r)
}

// addRepoLocked is AddRepo with s.mu held.
func (s *Server) addRepoLocked(owner, name string, r Repo) *repo {
	spec := Repo{
		DefaultBranch: cmp.Or(r.DefaultBranch, defaultBranch),
		Topics:        slices.Clone(r.Topics),
		Branches:      maps.Clone(r.Branches),
		Files:         map[string][]string{},
		Private:       r.Private,
		Archived:      r.Archived,
		CloneURL:      r.CloneURL,
	}
	if spec.Branches == nil {
		spec.Branches = map[string]string{}
	}
	if _, ok := spec.Branches[spec.DefaultBranch]; !ok {
		spec.Branches[spec.DefaultBranch] = fakeSHA(owner, name, spec.DefaultBranch)
	}
	for branch, paths := range r.Files {
		clean := make([]string, 0, len(paths))
		for _, p := range paths {
			if p = strings.Trim(p, "/"); p != "" {
				clean = append(clean, p)
			}
		}
		spec.Files[branch] = clean
	}
	now := time.Now()
	rp := s.repos[repoKey(owner, name)]
	if rp == nil {
		s.nextID++
		rp = &repo{id: s.nextID, owner: owner, name: name, created: now, pushed: now, statuses: map[string][]status{}}
		s.repos[repoKey(owner, name)] = rp
	}
	rp.spec = spec
	rp.updated = now
	return rp
}

// repoLocked finds a repository for a change made through the Go or admin
// API. s.mu must be held.
func (s *Server) repoLocked(owner, name string) (*repo, error) {
	rp := s.repos[repoKey(owner, name)]
	if rp == nil {
		return nil, fmt.Errorf("repository %s/%s: %w", owner, name, ErrNotFound)
	}
	return rp, nil
}

// visibleRepoLocked finds the repository of an API request's {owner} and
// {repo}, answering 404 when it does not exist or is private and the caller
// anonymous. s.mu must be held.
func (s *Server) visibleRepoLocked(r *http.Request, c caller) (*repo, *reply) {
	rp := s.repos[repoKey(r.PathValue("owner"), r.PathValue("repo"))]
	if rp == nil || !rp.visibleTo(c) {
		rep := notFoundReply()
		return nil, &rep
	}
	return rp, nil
}

// visibleTo reports whether the caller may see the repository. Any valid
// credentials see every private repository.
func (rp *repo) visibleTo(c caller) bool { return !rp.spec.Private || c.authenticated() }

// fakeSHA makes up a stable commit SHA from its parts, for commits the
// caller did not name.
func fakeSHA(parts ...string) string {
	sum := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}

// permissionsJSON is the caller's access to a repository.
type permissionsJSON struct {
	Admin    bool `json:"admin"`
	Maintain bool `json:"maintain"`
	Push     bool `json:"push"`
	Triage   bool `json:"triage"`
	Pull     bool `json:"pull"`
}

// repoJSON is GitHub's repository representation.
type repoJSON struct {
	ID               int64            `json:"id"`
	NodeID           string           `json:"node_id"`
	Name             string           `json:"name"`
	FullName         string           `json:"full_name"`
	Private          bool             `json:"private"`
	Owner            userJSON         `json:"owner"`
	HTMLURL          string           `json:"html_url"`
	Description      *string          `json:"description"`
	Fork             bool             `json:"fork"`
	URL              string           `json:"url"`
	PullsURL         string           `json:"pulls_url"`
	BranchesURL      string           `json:"branches_url"`
	ContentsURL      string           `json:"contents_url"`
	StatusesURL      string           `json:"statuses_url"`
	CreatedAt        timestamp        `json:"created_at"`
	UpdatedAt        timestamp        `json:"updated_at"`
	PushedAt         timestamp        `json:"pushed_at"`
	GitURL           string           `json:"git_url"`
	SSHURL           string           `json:"ssh_url"`
	CloneURL         string           `json:"clone_url"`
	SVNURL           string           `json:"svn_url"`
	Homepage         *string          `json:"homepage"`
	Size             int              `json:"size"`
	StargazersCount  int              `json:"stargazers_count"`
	WatchersCount    int              `json:"watchers_count"`
	Language         *string          `json:"language"`
	HasIssues        bool             `json:"has_issues"`
	HasProjects      bool             `json:"has_projects"`
	HasWiki          bool             `json:"has_wiki"`
	ForksCount       int              `json:"forks_count"`
	Archived         bool             `json:"archived"`
	Disabled         bool             `json:"disabled"`
	OpenIssuesCount  int              `json:"open_issues_count"`
	IsTemplate       bool             `json:"is_template"`
	Topics           []string         `json:"topics"`
	Visibility       string           `json:"visibility"`
	Forks            int              `json:"forks"`
	OpenIssues       int              `json:"open_issues"`
	Watchers         int              `json:"watchers"`
	DefaultBranch    string           `json:"default_branch"`
	Permissions      *permissionsJSON `json:"permissions,omitempty"`
	AllowForking     bool             `json:"allow_forking"`
	WebCommitSignoff bool             `json:"web_commit_signoff_required"`
}

// repoJSONLocked renders a repository; c, when authenticated, adds the
// caller's permissions. s.mu must be held.
func (s *Server) repoJSONLocked(rp *repo, c caller) repoJSON {
	api := s.url + apiPrefix + "/repos/" + rp.fullName()
	html := s.url + "/" + rp.fullName()
	host := strings.TrimPrefix(s.url, "http://")
	open := 0
	for _, p := range rp.pulls {
		if p.state == stateOpen {
			open++
		}
	}
	visibility := "public"
	if rp.spec.Private {
		visibility = "private"
	}
	j := repoJSON{
		ID:              rp.id,
		NodeID:          nodeID("Repository", rp.id),
		Name:            rp.name,
		FullName:        rp.fullName(),
		Private:         rp.spec.Private,
		Owner:           s.user(rp.owner),
		HTMLURL:         html,
		URL:             api,
		PullsURL:        api + "/pulls{/number}",
		BranchesURL:     api + "/branches{/branch}",
		ContentsURL:     api + "/contents/{+path}",
		StatusesURL:     api + "/statuses/{sha}",
		CreatedAt:       timestamp(rp.created),
		UpdatedAt:       timestamp(rp.updated),
		PushedAt:        timestamp(rp.pushed),
		GitURL:          "git://" + host + "/" + rp.fullName() + ".git",
		SSHURL:          "git@" + strings.Split(host, ":")[0] + ":" + rp.fullName() + ".git",
		CloneURL:        cmp.Or(rp.spec.CloneURL, html+".git"),
		SVNURL:          html,
		HasIssues:       true,
		HasProjects:     true,
		HasWiki:         true,
		Archived:        rp.spec.Archived,
		OpenIssuesCount: open,
		Topics:          append([]string{}, rp.spec.Topics...),
		Visibility:      visibility,
		OpenIssues:      open,
		DefaultBranch:   rp.spec.DefaultBranch,
		AllowForking:    true,
	}
	if c.authenticated() {
		j.Permissions = &permissionsJSON{Admin: true, Maintain: true, Push: true, Triage: true, Pull: true}
	}
	return j
}

// getRepo serves GET /repos/{owner}/{repo}.
func (s *Server) getRepo(r *http.Request, c caller) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, denied := s.visibleRepoLocked(r, c)
	if denied != nil {
		return *denied
	}
	return reply{status: http.StatusOK, body: s.repoJSONLocked(rp, c)}
}

// listOwnerRepos serves GET /orgs/{owner}/repos and GET /users/{owner}/repos:
// the repositories of an owner the caller may see, filtered by type
// (all, public, private, forks, sources, member, owner) and sorted by sort
// (created, updated, pushed, full_name) and direction. Organisations sort
// by created, users by full_name, by default. An owner with no repository at
// all is 404.
func (s *Server) listOwnerRepos(r *http.Request, c caller) reply {
	q := r.URL.Query()
	isOrg := strings.HasPrefix(r.URL.Path, apiPrefix+"/orgs/")
	sortBy := q.Get("sort")
	if sortBy == "" {
		sortBy = "full_name"
		if isOrg {
			sortBy = "created"
		}
	}
	direction := q.Get("direction")
	if direction == "" {
		direction = "desc"
		if sortBy == "full_name" {
			direction = "asc"
		}
	}
	kind := cmp.Or(q.Get("type"), "all")

	s.mu.Lock()
	defer s.mu.Unlock()
	owner := r.PathValue("owner")
	var found bool
	var repos []*repo
	for _, rp := range s.repos {
		if !strings.EqualFold(rp.owner, owner) {
			continue
		}
		found = true
		if !rp.visibleTo(c) {
			continue
		}
		switch kind {
		case "public":
			if rp.spec.Private {
				continue
			}
		case "private":
			if !rp.spec.Private {
				continue
			}
		case "forks":
			continue
		}
		repos = append(repos, rp)
	}
	if !found {
		return notFoundReply()
	}
	slices.SortFunc(repos, func(a, b *repo) int {
		var n int
		switch sortBy {
		case "updated":
			n = a.updated.Compare(b.updated)
		case "pushed":
			n = a.pushed.Compare(b.pushed)
		case "full_name":
			n = strings.Compare(strings.ToLower(a.fullName()), strings.ToLower(b.fullName()))
		}
		n = cmp.Or(n, cmp.Compare(a.id, b.id))
		if direction == "desc" {
			n = -n
		}
		return n
	})
	page, header := paginate(r, repos)
	body := make([]repoJSON, 0, len(page))
	for _, rp := range page {
		body = append(body, s.repoJSONLocked(rp, c))
	}
	return reply{status: http.StatusOK, body: body, header: header}
}
