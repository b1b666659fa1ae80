// Package webhook receives GitHub webhook deliveries, so that a push or a pull-request change
// is acted on at once instead of at the next poll.
//
// A Handler serves the endpoint (Path). It checks each delivery's X-Hub-Signature-256 against
// the shared secret, parses the push and pull_request events it acts on and queues them; a
// worker takes them from the queue (Run). What an event refreshes is the caller's business:
// the Handler has no client and changes nothing itself. Its answers follow GitHub's
// conventions:
//
//	200  ping, or an event or action that changes nothing here (ignored)
//	202  queued
//	400  a signed payload that does not parse
//	401  signature missing or wrong
//	405  not a POST
//	413  payload larger than Options.MaxPayload
//	503  queue full, or no secret configured: nothing was done; the poll catches up
//
// The package is pure apart from the HTTP it serves: RepoKey and Revision say how repository
// URLs and revisions are matched, and ParsePush and ParsePullRequest read payloads.
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-logr/logr"
)

// Path is where the endpoint is served, as in Argo CD, so that hooks move over unchanged.
const Path = "/api/webhook"

// Defaults of Options.
const (
	// DefaultMaxPayload is 1 MiB: a push of 20 commits, the most GitHub lists, stays well
	// below it unless they touch thousands of files.
	DefaultMaxPayload = 1 << 20
	// DefaultQueueSize is how many events may wait for the worker.
	DefaultQueueSize = 256
)

// The headers of a delivery.
const (
	HeaderEvent     = "X-GitHub-Event"
	HeaderDelivery  = "X-GitHub-Delivery"
	HeaderSignature = "X-Hub-Signature-256"
)

// Result is what became of a delivery, for metrics.
type Result string

// The results of a delivery.
const (
	ResultQueued           Result = "queued"
	ResultPing             Result = "ping"
	ResultIgnored          Result = "ignored"
	ResultBadPayload       Result = "bad_payload"
	ResultUnauthorized     Result = "unauthorized"
	ResultMethodNotAllowed Result = "method_not_allowed"
	ResultTooLarge         Result = "too_large"
	ResultQueueFull        Result = "queue_full"
	ResultNoSecret         Result = "no_secret"
)

// Options configure a Handler.
type Options struct {
	// Secret returns the secret deliveries are signed with. While it returns an error or an
	// empty secret, every delivery is refused: there is no unsigned mode. Required.
	Secret func(ctx context.Context) ([]byte, error)
	// QueueSize is how many events may wait for the worker; a delivery that finds the queue
	// full is refused with 503. Default DefaultQueueSize.
	QueueSize int
	// MaxPayload caps the body of a delivery, in bytes. Default DefaultMaxPayload.
	MaxPayload int64
	// Logger logs refusals, and ignored deliveries at V(1). Payloads are never logged.
	Logger logr.Logger
	// Observe is told the outcome of each delivery, by event (EventPush, EventPullRequest,
	// EventPing or "other"); optional.
	Observe func(event string, result Result)
}

// Handler is the webhook endpoint and its queue. It is safe for concurrent use.
type Handler struct {
	opts  Options
	queue chan Event
}

// New returns a Handler.
func New(opts Options) *Handler {
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.MaxPayload <= 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.Observe == nil {
		opts.Observe = func(string, Result) {}
	}
	return &Handler{opts: opts, queue: make(chan Event, opts.QueueSize)}
}

// Run hands each queued event to handle, one at a time, until ctx is done.
func (h *Handler) Run(ctx context.Context, handle func(context.Context, Event)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-h.queue:
			handle(ctx, ev)
		}
	}
}

// ServeHTTP receives one delivery.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	event := r.Header.Get(HeaderEvent)
	delivery := r.Header.Get(HeaderDelivery)
	label := eventLabel(event)
	// Both headers come from whoever connects: bounded before they reach a log line.
	log := h.opts.Logger.WithValues("event", clip(event), "delivery", clip(delivery))
	refuse := func(status int, result Result, reason string) {
		log.Info("Webhook delivery refused", "status", status, "reason", reason, "remote", r.RemoteAddr)
		h.opts.Observe(label, result)
		http.Error(w, reason, status)
	}

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuse(http.StatusMethodNotAllowed, ResultMethodNotAllowed, "only POST is allowed")
		return
	}
	if r.ContentLength > h.opts.MaxPayload {
		refuse(http.StatusRequestEntityTooLarge, ResultTooLarge, "payload too large")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxPayload))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			refuse(http.StatusRequestEntityTooLarge, ResultTooLarge, "payload too large")
			return
		}
		refuse(http.StatusBadRequest, ResultBadPayload, "the body could not be read")
		return
	}
	secret, err := h.opts.Secret(r.Context())
	if err != nil || len(secret) == 0 {
		reason := "no webhook secret is configured"
		if err != nil {
			log.Error(err, "Webhook secret not readable")
			reason = "the webhook secret could not be read"
		}
		refuse(http.StatusServiceUnavailable, ResultNoSecret, reason)
		return
	}
	if !Verify(secret, body, r.Header.Get(HeaderSignature)) {
		reason := "wrong signature"
		if r.Header.Get(HeaderSignature) == "" {
			reason = "no signature"
		}
		refuse(http.StatusUnauthorized, ResultUnauthorized, reason)
		return
	}

	payload, err := formPayload(r.Header.Get("Content-Type"), body)
	if err != nil {
		refuse(http.StatusBadRequest, ResultBadPayload, err.Error())
		return
	}
	ev := Event{Delivery: delivery, Name: event}
	switch event {
	case EventPing:
		log.Info("Webhook ping")
		h.opts.Observe(label, ResultPing)
		_, _ = io.WriteString(w, "pong\n")
		return
	case EventPush:
		ev.Push, err = ParsePush(payload)
	case EventPullRequest:
		ev.PullRequest, err = ParsePullRequest(payload)
		if err == nil && !ev.PullRequest.Relevant() {
			h.ignore(w, log, label, "this pull_request action changes nothing here")
			return
		}
	default:
		h.ignore(w, log, label, "this event changes nothing here")
		return
	}
	if err != nil {
		log.Info("Webhook delivery refused", "status", http.StatusBadRequest, "reason", err.Error())
		h.opts.Observe(label, ResultBadPayload)
		http.Error(w, "payload does not parse", http.StatusBadRequest)
		return
	}
	select {
	case h.queue <- ev:
		h.opts.Observe(label, ResultQueued)
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "queued\n")
	default:
		refuse(http.StatusServiceUnavailable, ResultQueueFull, "too many deliveries are waiting; the next poll catches up")
	}
}

func (h *Handler) ignore(w http.ResponseWriter, log logr.Logger, label, reason string) {
	log.V(1).Info("Webhook delivery ignored", "reason", reason)
	h.opts.Observe(label, ResultIgnored)
	_, _ = io.WriteString(w, "ignored: "+reason+"\n")
}

// Sign returns the X-Hub-Signature-256 value of body signed with secret, as GitHub computes it.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether signature (an X-Hub-Signature-256 value) is body's signature with
// secret. It compares in constant time; an empty secret verifies nothing.
func Verify(secret, body []byte, signature string) bool {
	digest, ok := strings.CutPrefix(signature, "sha256=")
	if !ok || len(secret) == 0 {
		return false
	}
	got, err := hex.DecodeString(digest)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// formPayload returns the JSON of a delivery: the body itself, or the payload field of a
// form, the other content type GitHub offers.
func formPayload(contentType string, body []byte) ([]byte, error) {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	if mediaType != "application/x-www-form-urlencoded" {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, errors.New("the form does not parse")
	}
	return []byte(form.Get("payload")), nil
}

// eventLabel bounds the event names metrics are labelled with: the header is anyone's to set.
func eventLabel(event string) string {
	switch event {
	case EventPing, EventPush, EventPullRequest:
		return event
	}
	return "other"
}

// clip bounds a header's value for a log line.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
