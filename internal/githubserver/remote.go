package githubserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Remote drives a server in another process through its admin API, with the
// Server's methods of the same names. URL is the server's [Server.URL]; the
// caller must run on the same machine, since the admin API serves loopback
// clients only.
//
//	n, err := githubserver.Remote{URL: u}.OpenPR(ctx, "acme", "app", githubserver.PullRequest{Title: "Add cache", Head: "cache"})
type Remote struct {
	// URL is the base URL of the server, e.g. http://127.0.0.1:38123.
	URL string
}

// RemoteError is an error answer of the admin API. It matches [ErrNotFound]
// (with errors.Is) when the status is 404.
type RemoteError struct {
	// Method and Path are those of the request.
	Method, Path string
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Message is the server's explanation.
	Message string
}

// Error implements error.
func (e *RemoteError) Error() string {
	return fmt.Sprintf("githubserver admin API: %s %s: %d %s", e.Method, e.Path, e.StatusCode, e.Message)
}

// Is makes a 404 match ErrNotFound.
func (e *RemoteError) Is(target error) bool {
	return target == ErrNotFound && e.StatusCode == http.StatusNotFound
}

// AddRepo is [Server.AddRepo].
func (rm Remote) AddRepo(ctx context.Context, owner, name string, r Repo) error {
	return rm.call(ctx, http.MethodPut, repoPath(owner, name), r, nil)
}

// AddToken is [Server.AddToken].
func (rm Remote) AddToken(ctx context.Context, token string) error {
	return rm.call(ctx, http.MethodPost, adminPrefix+"/tokens", adminToken{Token: token}, nil)
}

// AddHook is [Server.AddHook].
func (rm Remote) AddHook(ctx context.Context, owner, repo, hookURL, secret string) error {
	return rm.call(ctx, http.MethodPost, repoPath(owner, repo)+"/hooks", adminHook{URL: hookURL, Secret: secret}, nil)
}

// OpenPR is [Server.OpenPR]; it returns once the webhooks are delivered.
func (rm Remote) OpenPR(ctx context.Context, owner, repo string, pr PullRequest) (int, error) {
	var out adminNumber
	if err := rm.call(ctx, http.MethodPost, repoPath(owner, repo)+"/pulls", pr, &out); err != nil {
		return 0, err
	}
	return out.Number, nil
}

// PushPR is [Server.PushPR].
func (rm Remote) PushPR(ctx context.Context, owner, repo string, number int, sha string) error {
	return rm.call(ctx, http.MethodPost, pullPath(owner, repo, number)+"/push", adminSHA{SHA: sha}, nil)
}

// EditPR is [Server.EditPR]: it reads the pull request, lets edit change
// it, and sends the result back, so two concurrent edits of the same pull
// request can lose one another's changes.
func (rm Remote) EditPR(ctx context.Context, owner, repo string, number int, edit func(*PullRequest)) error {
	var pr PullRequest
	if err := rm.call(ctx, http.MethodGet, pullPath(owner, repo, number), nil, &pr); err != nil {
		return err
	}
	edit(&pr)
	return rm.call(ctx, http.MethodPut, pullPath(owner, repo, number), pr, nil)
}

// ClosePR is [Server.ClosePR].
func (rm Remote) ClosePR(ctx context.Context, owner, repo string, number int, merged bool) error {
	return rm.call(ctx, http.MethodPost, pullPath(owner, repo, number)+"/close", adminClose{Merged: merged}, nil)
}

// Push is [Server.Push].
func (rm Remote) Push(ctx context.Context, owner, repo, branch, sha string) error {
	return rm.call(ctx, http.MethodPost, repoPath(owner, repo)+"/push", adminPush{Branch: branch, SHA: sha}, nil)
}

// Statuses is [Server.Statuses], except that an unknown repository is an
// error.
func (rm Remote) Statuses(ctx context.Context, owner, repo, sha string) ([]Status, error) {
	var out []Status
	if err := rm.call(ctx, http.MethodGet, repoPath(owner, repo)+"/statuses/"+url.PathEscape(sha), nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// repoPath is the admin path of a repository.
func repoPath(owner, repo string) string {
	return adminPrefix + "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo)
}

// pullPath is the admin path of a pull request.
func pullPath(owner, repo string, number int) string {
	return repoPath(owner, repo) + "/pulls/" + strconv.Itoa(number)
}

// call sends one admin request with in as JSON body (if not nil) and decodes
// the answer into out (if not nil).
func (rm Remote) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("githubserver admin API: %s %s: encode: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(rm.URL, "/")+path, body)
	if err != nil {
		return fmt.Errorf("githubserver admin API: %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("githubserver admin API: %s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRequestBody))
	if err != nil {
		return fmt.Errorf("githubserver admin API: %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var e adminError
		if json.Unmarshal(data, &e) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(data))
		}
		return &RemoteError{Method: method, Path: path, StatusCode: resp.StatusCode, Message: e.Message}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("githubserver admin API: %s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}
