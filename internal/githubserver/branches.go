package githubserver

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// branchCommitJSON is the commit a branch points at.
type branchCommitJSON struct {
	SHA     string `json:"sha"`
	URL     string `json:"url"`
	HTMLURL string `json:"html_url,omitempty"`
}

// branchLinksJSON is a branch's _links.
type branchLinksJSON struct {
	Self string `json:"self"`
	HTML string `json:"html"`
}

// branchJSON is GitHub's branch representation; _links and protection_url
// appear on the single-branch endpoint only.
type branchJSON struct {
	Name          string           `json:"name"`
	Commit        branchCommitJSON `json:"commit"`
	Protected     bool             `json:"protected"`
	Links         *branchLinksJSON `json:"_links,omitempty"`
	ProtectionURL string           `json:"protection_url,omitempty"`
}

// branchJSONLocked renders a branch of a repository. s.mu must be held.
func (s *Server) branchJSONLocked(rp *repo, name string, full bool) branchJSON {
	api := s.url + apiPrefix + "/repos/" + rp.fullName()
	sha := rp.spec.Branches[name]
	j := branchJSON{
		Name:   name,
		Commit: branchCommitJSON{SHA: sha, URL: api + "/commits/" + sha},
	}
	if full {
		j.Commit.HTMLURL = s.url + "/" + rp.fullName() + "/commit/" + sha
		j.Links = &branchLinksJSON{Self: api + "/branches/" + name, HTML: s.url + "/" + rp.fullName() + "/tree/" + name}
		j.ProtectionURL = api + "/branches/" + name + "/protection"
	}
	return j
}

// listBranches serves GET /repos/{owner}/{repo}/branches, in name order as
// GitHub lists them. No branch is protected, so protected=true lists none.
func (s *Server) listBranches(r *http.Request, c caller) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, denied := s.visibleRepoLocked(r, c)
	if denied != nil {
		return *denied
	}
	var names []string
	if r.URL.Query().Get("protected") != "true" {
		names = slices.Sorted(maps.Keys(rp.spec.Branches))
	}
	page, header := paginate(r, names)
	body := make([]branchJSON, 0, len(page))
	for _, name := range page {
		body = append(body, s.branchJSONLocked(rp, name, false))
	}
	return reply{status: http.StatusOK, body: body, header: header}
}

// getBranch serves GET /repos/{owner}/{repo}/branches/{branch}.
func (s *Server) getBranch(r *http.Request, c caller) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, denied := s.visibleRepoLocked(r, c)
	if denied != nil {
		return *denied
	}
	name := r.PathValue("branch")
	if _, ok := rp.spec.Branches[name]; !ok {
		return errorReply(http.StatusNotFound, messageBranchNotFound, docsREST)
	}
	return reply{status: http.StatusOK, body: s.branchJSONLocked(rp, name, true)}
}

// resolveBranch finds the branch a ref names: empty means the default
// branch; a branch name, refs/heads/NAME or heads/NAME name that branch; a
// commit SHA names the first branch (by name) whose head it is.
func (rp *repo) resolveBranch(ref string) (string, error) {
	if ref == "" {
		return rp.spec.DefaultBranch, nil
	}
	for _, candidate := range []string{ref, strings.TrimPrefix(ref, "refs/heads/"), strings.TrimPrefix(ref, "heads/")} {
		if _, ok := rp.spec.Branches[candidate]; ok {
			return candidate, nil
		}
	}
	var heads []string
	for name, sha := range rp.spec.Branches {
		if strings.EqualFold(sha, ref) {
			heads = append(heads, name)
		}
	}
	if len(heads) == 0 {
		return "", fmt.Errorf("ref %s: %w", ref, ErrNotFound)
	}
	return slices.Min(heads), nil
}
