package githubserver

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// maxDescription is the longest commit status description GitHub accepts,
// in characters.
const maxDescription = 140

// maxRequestBody bounds the JSON bodies the server reads.
const maxRequestBody = 1 << 20

// Status is a commit status, as created through
// POST /repos/{owner}/{repo}/statuses/{sha}.
type Status struct {
	// State is pending, success, failure or error.
	State string `json:"state"`
	// Context tells the statuses of different systems apart; "default" if
	// the client sent none.
	Context string `json:"context"`
	// Description is a short summary, at most 140 characters.
	Description string `json:"description,omitempty"`
	// TargetURL links to details.
	TargetURL string `json:"target_url,omitempty"`
	// CreatedAt is when it was created.
	CreatedAt time.Time `json:"created_at"`
}

// status is a Status with what the API shows besides.
type status struct {
	Status
	id      int64
	creator string
}

// validStates are the commit status states GitHub accepts.
var validStates = []string{"pending", "success", "failure", "error"}

// Statuses returns the statuses created for commit sha of owner/repo, oldest
// first; none for an unknown repository.
func (s *Server) Statuses(owner, repo, sha string) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[repoKey(owner, repo)]
	if rp == nil {
		return nil
	}
	return rp.statusList(sha)
}

// statusList copies the statuses of a commit, oldest first.
func (rp *repo) statusList(sha string) []Status {
	list := rp.statuses[strings.ToLower(sha)]
	out := make([]Status, 0, len(list))
	for _, st := range list {
		out = append(out, st.Status)
	}
	return out
}

// statusJSON is GitHub's commit status representation.
type statusJSON struct {
	URL         string    `json:"url"`
	AvatarURL   string    `json:"avatar_url"`
	ID          int64     `json:"id"`
	NodeID      string    `json:"node_id"`
	State       string    `json:"state"`
	Description *string   `json:"description"`
	TargetURL   *string   `json:"target_url"`
	Context     string    `json:"context"`
	CreatedAt   timestamp `json:"created_at"`
	UpdatedAt   timestamp `json:"updated_at"`
	Creator     userJSON  `json:"creator"`
}

// statusJSON renders a status of a commit.
func (s *Server) statusJSON(rp *repo, sha string, st status) statusJSON {
	j := statusJSON{
		URL:       s.url + apiPrefix + "/repos/" + rp.fullName() + "/statuses/" + sha,
		AvatarURL: s.url + "/avatars/u/" + st.creator,
		ID:        st.id,
		NodeID:    nodeID("StatusContext", st.id),
		State:     st.State,
		Context:   st.Context,
		CreatedAt: timestamp(st.CreatedAt),
		UpdatedAt: timestamp(st.CreatedAt),
		Creator:   s.user(st.creator),
	}
	if st.Description != "" {
		d := st.Description
		j.Description = &d
	}
	if st.TargetURL != "" {
		u := st.TargetURL
		j.TargetURL = &u
	}
	return j
}

// createStatusRequest is the body of POST /repos/{owner}/{repo}/statuses/{sha}.
type createStatusRequest struct {
	State       string `json:"state"`
	TargetURL   string `json:"target_url"`
	Description string `json:"description"`
	Context     string `json:"context"`
}

// createStatus serves POST /repos/{owner}/{repo}/statuses/{sha}. It needs
// credentials; any SHA is accepted, since the server holds no commits.
func (s *Server) createStatus(r *http.Request, c caller) reply {
	if !c.authenticated() {
		return errorReply(http.StatusUnauthorized, messageRequiresAuth, docsAuth)
	}
	var in createStatusRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody)).Decode(&in); err != nil {
		return errorReply(http.StatusBadRequest, messageBadJSON, docsREST)
	}
	if !slices.Contains(validStates, in.State) {
		return validationReply("Status", "state", messageStateInvalid)
	}
	if utf8.RuneCountInString(in.Description) > maxDescription {
		return validationReply("Status", "description", messageDescriptionLong)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	rp, denied := s.visibleRepoLocked(r, c)
	if denied != nil {
		return *denied
	}
	sha := strings.ToLower(r.PathValue("sha"))
	s.nextID++
	st := status{
		Status: Status{
			State:       in.State,
			Context:     cmp.Or(in.Context, "default"),
			Description: in.Description,
			TargetURL:   in.TargetURL,
			CreatedAt:   time.Now().UTC(),
		},
		id:      s.nextID,
		creator: c.login,
	}
	rp.statuses[sha] = append(rp.statuses[sha], st)
	return reply{status: http.StatusCreated, body: s.statusJSON(rp, sha, st)}
}

// combinedStatusJSON is GitHub's combined status of a commit.
type combinedStatusJSON struct {
	State      string       `json:"state"`
	Statuses   []statusJSON `json:"statuses"`
	SHA        string       `json:"sha"`
	TotalCount int          `json:"total_count"`
	Repository repoJSON     `json:"repository"`
	CommitURL  string       `json:"commit_url"`
	URL        string       `json:"url"`
}

// getCommitStatuses serves GET /repos/{owner}/{repo}/commits/{ref}/statuses
// (newest first, paginated) and .../commits/{ref}/status (the combined
// status: the latest status of each context). The ref is a SHA or a branch.
func (s *Server) getCommitStatuses(r *http.Request, c caller) reply {
	rest := r.PathValue("rest")
	ref, combined := strings.CutSuffix(rest, "/status")
	if !combined {
		var ok bool
		if ref, ok = strings.CutSuffix(rest, "/statuses"); !ok {
			return notFoundReply()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, denied := s.visibleRepoLocked(r, c)
	if denied != nil {
		return *denied
	}
	sha := strings.ToLower(ref)
	if branch, err := rp.resolveBranch(ref); err == nil && ref != "" {
		sha = strings.ToLower(rp.spec.Branches[branch])
	}
	list := rp.statuses[sha]

	if !combined {
		newest := slices.Clone(list)
		slices.Reverse(newest)
		page, header := paginate(r, newest)
		body := make([]statusJSON, 0, len(page))
		for _, st := range page {
			body = append(body, s.statusJSON(rp, sha, st))
		}
		return reply{status: http.StatusOK, body: body, header: header}
	}

	var latest []status // one per context, in order of first appearance
	for _, st := range list {
		i := slices.IndexFunc(latest, func(l status) bool { return l.Context == st.Context })
		if i < 0 {
			latest = append(latest, st)
		} else {
			latest[i] = st
		}
	}
	state := "success"
	if len(latest) == 0 {
		state = "pending"
	}
	statuses := make([]statusJSON, 0, len(latest))
	for _, st := range latest {
		switch {
		case st.State == "error" || st.State == "failure":
			state = "failure"
		case st.State == "pending" && state != "failure":
			state = "pending"
		}
		statuses = append(statuses, s.statusJSON(rp, sha, st))
	}
	api := s.url + apiPrefix + "/repos/" + rp.fullName()
	return reply{status: http.StatusOK, body: combinedStatusJSON{
		State:      state,
		Statuses:   statuses,
		SHA:        sha,
		TotalCount: len(statuses),
		Repository: s.repoJSONLocked(rp, c),
		CommitURL:  api + "/commits/" + sha,
		URL:        api + "/commits/" + sha + "/status",
	}}
}
