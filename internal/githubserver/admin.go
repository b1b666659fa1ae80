package githubserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
)

// adminPrefix is where the admin API lives, outside GitHub's /api/v3.
const adminPrefix = "/_navarch"

// Bodies of the admin API, shared by the server and [Remote].
type (
	adminToken struct {
		Token string `json:"token"`
	}
	adminHook struct {
		URL    string `json:"url"`
		Secret string `json:"secret"`
	}
	adminNumber struct {
		Number int `json:"number"`
	}
	adminSHA struct {
		SHA string `json:"sha"`
	}
	adminClose struct {
		Merged bool `json:"merged"`
	}
	adminPush struct {
		Branch string `json:"branch"`
		SHA    string `json:"sha"`
	}
	adminError struct {
		Message string `json:"message"`
	}
)

// admin serves the admin API, which does over HTTP what the Server's Go
// methods do, for a server running in another process:
//
//	PUT   /_navarch/repos/{owner}/{repo}                    Repo → 204
//	POST  /_navarch/tokens                                  {"token"} → 204
//	POST  /_navarch/repos/{owner}/{repo}/hooks              {"url","secret"} → 204
//	POST  /_navarch/repos/{owner}/{repo}/pulls              PullRequest → 201 {"number"}
//	GET   /_navarch/repos/{owner}/{repo}/pulls/{number}     → 200 PullRequest
//	PUT   /_navarch/repos/{owner}/{repo}/pulls/{number}     PullRequest (the edited whole) → 204
//	POST  /_navarch/repos/{owner}/{repo}/pulls/{number}/push  {"sha"} → 204
//	POST  /_navarch/repos/{owner}/{repo}/pulls/{number}/close {"merged"} → 204
//	POST  /_navarch/repos/{owner}/{repo}/push               {"branch","sha"} → 204
//	GET   /_navarch/repos/{owner}/{repo}/statuses/{sha}     → 200 [Status]
//
// Changes deliver their webhooks before the answer. Errors answer
// {"message"} with 404 (no such repository or pull request), 422 (a change
// GitHub would refuse) or 400 (a malformed body). Only loopback clients are
// served: anyone who can reach the admin API can mint credentials.
func (s *Server) admin() http.Handler {
	mux := http.NewServeMux()
	repo := adminPrefix + "/repos/{owner}/{repo}"
	mux.HandleFunc("PUT "+repo, s.adminAddRepo)
	mux.HandleFunc("POST "+adminPrefix+"/tokens", s.adminAddToken)
	mux.HandleFunc("POST "+repo+"/hooks", s.adminAddHook)
	mux.HandleFunc("POST "+repo+"/pulls", s.adminOpenPR)
	mux.HandleFunc("GET "+repo+"/pulls/{number}", s.adminGetPR)
	mux.HandleFunc("PUT "+repo+"/pulls/{number}", s.adminEditPR)
	mux.HandleFunc("POST "+repo+"/pulls/{number}/push", s.adminPushPR)
	mux.HandleFunc("POST "+repo+"/pulls/{number}/close", s.adminClosePR)
	mux.HandleFunc("POST "+repo+"/push", s.adminPush)
	mux.HandleFunc("GET "+repo+"/statuses/{sha}", s.adminStatuses)
	mux.HandleFunc(adminPrefix+"/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, adminError{Message: "no admin endpoint " + r.Method + " " + r.URL.Path})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopback(r.RemoteAddr) {
			writeJSON(w, http.StatusForbidden, adminError{Message: "the admin API serves loopback clients only"})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// isLoopback reports whether a RemoteAddr is on the loopback interface.
func isLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// decodeAdmin reads a JSON body strictly, so that a misspelt field is an
// error rather than a silent default.
func decodeAdmin(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, adminError{Message: fmt.Sprintf("decode body: %v", err)})
		return false
	}
	return true
}

// adminFail answers the error of a change.
func adminFail(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, errInvalid):
		status = http.StatusUnprocessableEntity
	}
	writeJSON(w, status, adminError{Message: err.Error()})
}

// adminPRNumber reads {number}, answering 404 if it is not one.
func adminPRNumber(w http.ResponseWriter, r *http.Request) (int, bool) {
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil {
		writeJSON(w, http.StatusNotFound, adminError{Message: fmt.Sprintf("pull request %q: %v", r.PathValue("number"), ErrNotFound)})
		return 0, false
	}
	return n, true
}

func (s *Server) adminAddRepo(w http.ResponseWriter, r *http.Request) {
	var in Repo
	if !decodeAdmin(w, r, &in) {
		return
	}
	s.AddRepo(r.PathValue("owner"), r.PathValue("repo"), in)
	s.log.V(1).Info("Repository added", "owner", r.PathValue("owner"), "repo", r.PathValue("repo"))
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminAddToken(w http.ResponseWriter, r *http.Request) {
	var in adminToken
	if !decodeAdmin(w, r, &in) {
		return
	}
	if in.Token == "" {
		adminFail(w, fmt.Errorf("token: %w: required", errInvalid))
		return
	}
	s.AddToken(in.Token)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminAddHook(w http.ResponseWriter, r *http.Request) {
	var in adminHook
	if !decodeAdmin(w, r, &in) {
		return
	}
	if err := s.addHook(r.PathValue("owner"), r.PathValue("repo"), in.URL, in.Secret); err != nil {
		adminFail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminOpenPR(w http.ResponseWriter, r *http.Request) {
	var in PullRequest
	if !decodeAdmin(w, r, &in) {
		return
	}
	n, out, err := s.openPR(r.PathValue("owner"), r.PathValue("repo"), in)
	if err != nil {
		adminFail(w, err)
		return
	}
	s.deliverAll(out)
	writeJSON(w, http.StatusCreated, adminNumber{Number: n})
}

func (s *Server) adminGetPR(w http.ResponseWriter, r *http.Request) {
	n, ok := adminPRNumber(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	_, p, err := s.pullLocked(r.PathValue("owner"), r.PathValue("repo"), n)
	var pr PullRequest
	if err == nil {
		pr = p.PullRequest
		pr.Labels = slices.Clone(p.Labels)
	}
	s.mu.Unlock()
	if err != nil {
		adminFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, pr)
}

func (s *Server) adminEditPR(w http.ResponseWriter, r *http.Request) {
	n, ok := adminPRNumber(w, r)
	if !ok {
		return
	}
	var in PullRequest
	if !decodeAdmin(w, r, &in) {
		return
	}
	out, err := s.editPR(r.PathValue("owner"), r.PathValue("repo"), n, func(pr *PullRequest) error {
		*pr = in
		return nil
	})
	if err != nil {
		adminFail(w, err)
		return
	}
	s.deliverAll(out)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminPushPR(w http.ResponseWriter, r *http.Request) {
	n, ok := adminPRNumber(w, r)
	if !ok {
		return
	}
	var in adminSHA
	if !decodeAdmin(w, r, &in) {
		return
	}
	out, err := s.pushPR(r.PathValue("owner"), r.PathValue("repo"), n, in.SHA)
	if err != nil {
		adminFail(w, err)
		return
	}
	s.deliverAll(out)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminClosePR(w http.ResponseWriter, r *http.Request) {
	n, ok := adminPRNumber(w, r)
	if !ok {
		return
	}
	var in adminClose
	if !decodeAdmin(w, r, &in) {
		return
	}
	out, err := s.closePR(r.PathValue("owner"), r.PathValue("repo"), n, in.Merged)
	if err != nil {
		adminFail(w, err)
		return
	}
	s.deliverAll(out)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminPush(w http.ResponseWriter, r *http.Request) {
	var in adminPush
	if !decodeAdmin(w, r, &in) {
		return
	}
	out, err := s.push(r.PathValue("owner"), r.PathValue("repo"), in.Branch, in.SHA)
	if err != nil {
		adminFail(w, err)
		return
	}
	s.deliverAll(out)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminStatuses(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rp, err := s.repoLocked(r.PathValue("owner"), r.PathValue("repo"))
	var list []Status
	if err == nil {
		list = rp.statusList(r.PathValue("sha"))
	}
	s.mu.Unlock()
	if err != nil {
		adminFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}
