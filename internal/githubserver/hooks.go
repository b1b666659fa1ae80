package githubserver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Webhook event names, as in X-GitHub-Event.
const (
	eventPullRequest = "pull_request"
	eventPush        = "push"
)

// hookTimeout is how long a receiver has to answer a delivery, as on GitHub.
const hookTimeout = 10 * time.Second

// hookUserAgent is the User-Agent of deliveries; GitHub's is
// GitHub-Hookshot/<short commit>.
const hookUserAgent = "GitHub-Hookshot/navarch"

// zeroSHA is the before of a push that creates a branch and the after of one
// that deletes it.
var zeroSHA = strings.Repeat("0", 40)

// hook is a repository webhook.
type hook struct {
	id          int64
	url, secret string
}

// Delivery is one webhook delivery the server made.
type Delivery struct {
	// ID is the delivery's X-GitHub-Delivery.
	ID string
	// Event is the X-GitHub-Event, e.g. pull_request or push.
	Event string
	// Action is the payload's action, "" for events without one (push).
	Action string
	// URL is where it was sent.
	URL string
	// StatusCode is the receiver's answer, 0 if there was none.
	StatusCode int
	// Err is why there was no answer.
	Err error
}

// outgoing is a webhook delivery prepared under the lock, sent after it.
type outgoing struct {
	hookID             int64
	repoID             int64
	url, secret, event string
	action             string
	body               []byte
}

// AddHook adds a webhook to owner/repo: every change made through the Go or
// admin API delivers the matching event to url, signed with secret (no
// signature headers if secret is empty). It panics if the repository was
// never added.
func (s *Server) AddHook(owner, repo, url, secret string) {
	if err := s.addHook(owner, repo, url, secret); err != nil {
		panic(fmt.Sprintf("githubserver: AddHook: %v", err))
	}
}

// addHook adds a webhook to a repository.
func (s *Server) addHook(owner, repoName, url, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return err
	}
	if url == "" {
		return fmt.Errorf("hook of %s: url: %w: required", rp.fullName(), errInvalid)
	}
	s.nextID++
	rp.hooks = append(rp.hooks, hook{id: s.nextID, url: url, secret: secret})
	return nil
}

// Deliveries returns the webhook deliveries made so far, oldest first.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deliveries)
}

// Push moves branch of owner/repo to sha (creating the branch if needed, or
// deleting it if sha is empty) and delivers a `push` event; open pull
// requests whose head is that branch move to sha too and deliver
// `pull_request` with action synchronize. Pushing the commit a branch
// already has does nothing. It panics if the repository was never added or
// the push deletes the default branch.
func (s *Server) Push(owner, repo, branch, sha string) {
	out, err := s.push(owner, repo, branch, sha)
	if err != nil {
		panic(fmt.Sprintf("githubserver: Push: %v", err))
	}
	s.deliverAll(out)
}

// push updates a branch and returns the webhooks to deliver.
func (s *Server) push(owner, repoName, branch, sha string) ([]outgoing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return nil, err
	}
	if branch == "" {
		return nil, fmt.Errorf("push to %s: branch: %w: required", rp.fullName(), errInvalid)
	}
	before, existed := rp.spec.Branches[branch]
	switch {
	case sha == "" && !existed:
		return nil, fmt.Errorf("push to %s: branch %s: %w", rp.fullName(), branch, ErrNotFound)
	case sha == "" && branch == rp.spec.DefaultBranch:
		return nil, fmt.Errorf("push to %s: %w: the default branch %s cannot be deleted", rp.fullName(), errInvalid, branch)
	case sha == "":
		delete(rp.spec.Branches, branch)
	case existed && before == sha:
		return nil, nil
	default:
		rp.spec.Branches[branch] = sha
	}
	now := time.Now()
	rp.pushed, rp.updated = now, now

	ev := s.pushEventLocked(rp, branch, shaOrZero(before, existed), shaOrZero(sha, sha != ""), now)
	out := s.hookDeliveriesLocked(rp, eventPush, "", ev)
	if sha != "" {
		for _, p := range rp.pulls {
			if p.state == stateOpen && p.Head == branch {
				out = append(out, s.synchronizeLocked(rp, p, sha, defaultLogin)...)
			}
		}
	}
	return out, nil
}

// shaOrZero returns sha if ok, else the zero SHA.
func shaOrZero(sha string, ok bool) string {
	if ok {
		return sha
	}
	return zeroSHA
}

// hookDeliveriesLocked prepares the delivery of one event to every hook of
// a repository. s.mu must be held.
func (s *Server) hookDeliveriesLocked(rp *repo, event, action string, payload any) []outgoing {
	if len(rp.hooks) == 0 {
		return nil
	}
	body, err := json.Marshal(payload)
	if err != nil {
		s.log.Error(err, "Encoding a webhook payload failed", "event", event, "repository", rp.fullName())
		return nil
	}
	out := make([]outgoing, 0, len(rp.hooks))
	for _, h := range rp.hooks {
		out = append(out, outgoing{hookID: h.id, repoID: rp.id, url: h.url, secret: h.secret, event: event, action: action, body: body})
	}
	return out
}

// deliverAll sends prepared deliveries one after the other. A failed
// delivery is logged and recorded, never returned: GitHub does not undo a
// change because a receiver is down.
func (s *Server) deliverAll(out []outgoing) {
	for _, o := range out {
		resp, err := s.send(context.Background(), o)
		if err != nil {
			s.log.Error(err, "Webhook delivery failed", "event", o.event, "action", o.action, "url", o.url)
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxRequestBody))
		_ = resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			s.log.Info("Webhook receiver refused a delivery", "event", o.event, "action", o.action, "url", o.url, "status", resp.StatusCode)
		} else {
			s.log.V(1).Info("Webhook delivered", "event", o.event, "action", o.action, "url", o.url, "status", resp.StatusCode)
		}
	}
}

// Deliver sends one signed webhook delivery of event with payload (encoded
// as JSON; a []byte or json.RawMessage is sent as is) to url, with the
// headers GitHub sends, and records it in [Server.Deliveries]. The caller
// must close the response body.
func (s *Server) Deliver(ctx context.Context, url, secret, event string, payload any) (*http.Response, error) {
	var body []byte
	switch p := payload.(type) {
	case []byte:
		body = p
	case json.RawMessage:
		body = p
	default:
		var err error
		if body, err = json.Marshal(payload); err != nil {
			return nil, fmt.Errorf("encode %s payload: %w", event, err)
		}
	}
	var head struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(body, &head) // payloads without an action have none
	return s.send(ctx, outgoing{url: url, secret: secret, event: event, action: head.Action, body: body})
}

// send makes one delivery and records it.
func (s *Server) send(ctx context.Context, o outgoing) (*http.Response, error) {
	d := Delivery{ID: newUUID(), Event: o.event, Action: o.action, URL: o.url}
	resp, err := s.post(ctx, d.ID, o)
	if err != nil {
		d.Err = err
	} else {
		d.StatusCode = resp.StatusCode
	}
	s.mu.Lock()
	s.deliveries = append(s.deliveries, d)
	s.mu.Unlock()
	return resp, err
}

// post sends a delivery's request with GitHub's headers.
func (s *Server) post(ctx context.Context, id string, o outgoing) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url, bytes.NewReader(o.body))
	if err != nil {
		return nil, fmt.Errorf("deliver %s to %s: %w", o.event, o.url, err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", hookUserAgent)
	h.Set("X-GitHub-Event", o.event)
	h.Set("X-GitHub-Delivery", id)
	if o.hookID != 0 {
		h.Set("X-GitHub-Hook-ID", strconv.FormatInt(o.hookID, 10))
		h.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
		h.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(o.repoID, 10))
	}
	if o.secret != "" {
		h.Set("X-Hub-Signature", "sha1="+sign(sha1.New, o.secret, o.body))
		h.Set("X-Hub-Signature-256", "sha256="+sign(sha256.New, o.secret, o.body))
	}
	resp, err := s.hooks.Do(req)
	if err != nil {
		return nil, fmt.Errorf("deliver %s to %s: %w", o.event, o.url, err)
	}
	return resp, nil
}

// sign is the hex HMAC of body with secret.
func sign(newHash func() hash.Hash, secret string, body []byte) string {
	mac := hmac.New(newHash, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
