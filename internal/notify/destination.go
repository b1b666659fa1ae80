package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Headers of webhook requests.
const (
	// HeaderSignature carries "sha256=" and the hex HMAC-SHA256, keyed with the destination's
	// hmacSecretKey, of the attempt's timestamp (HeaderTimestamp), a ".", and the body: the
	// timestamp is signed so that a receiver can reject a replayed request (see Sign).
	HeaderSignature = "X-Navarch-Signature"
	// HeaderDelivery carries the message's id, the same for every retry.
	HeaderDelivery = "X-Navarch-Delivery"
	// HeaderTimestamp carries the Unix time of the attempt, in seconds; it is signed.
	HeaderTimestamp = "X-Navarch-Timestamp"
	// HeaderTrigger carries the trigger.
	HeaderTrigger = "X-Navarch-Trigger"
)

// errSkipped is returned for a message a destination deliberately does not send.
var errSkipped = errors.New("skipped")

// permanentError is a failure that a retry cannot fix, such as a 404.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// retryAfterError is a failure whose receiver said when to try again (Retry-After).
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// maxRetryAfter bounds the wait a receiver's Retry-After may impose: a longer one is cut to
// it, so that a delivery never waits in memory for hours.
const maxRetryAfter = 5 * time.Minute

// Sign returns the value of HeaderSignature for a request sent at timestamp (the value of
// HeaderTimestamp) with body: the HMAC-SHA256 of timestamp + "." + body, keyed with key. A
// receiver recomputes it, compares in constant time, and rejects a timestamp far from its
// clock: a request captured on the way cannot be replayed later, nor its timestamp changed.
func Sign(key []byte, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// refuseRedirect is the CheckRedirect of webhook clients. A redirect is not followed: the
// next request would carry the signature and the configured headers to wherever the
// Location points, possibly another host. The 3xx answer is the attempt's result.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// SlackBody is the body posted to a Slack-compatible incoming webhook.
type SlackBody struct {
	Text string `json:"text"`
}

// SlackText is the text of a Slack message: the trigger in bold, then the summary.
func SlackText(m Message) string {
	mark := ":white_check_mark:"
	if m.Severity == "warning" {
		mark = ":warning:"
	}
	return fmt.Sprintf("%s *%s* %s", mark, m.Trigger, m.Summary)
}

// send makes one attempt to deliver d.
func (n *Notifier) send(ctx context.Context, d *delivery) error {
	switch d.dest.Kind {
	case KindWebhook:
		body, err := json.Marshal(d.msg)
		if err != nil {
			return &permanentError{err}
		}
		timestamp := strconv.FormatInt(time.Now().Unix(), 10)
		headers := map[string]string{HeaderDelivery: d.msg.ID, HeaderTrigger: string(d.msg.Trigger), HeaderTimestamp: timestamp}
		if len(d.dest.HMACKey) > 0 {
			headers[HeaderSignature] = Sign(d.dest.HMACKey, timestamp, body)
		}
		for k, v := range d.dest.Headers {
			headers[k] = v
		}
		return n.post(ctx, d.dest.URL, body, headers)
	case KindSlack:
		body, err := json.Marshal(SlackBody{Text: SlackText(d.msg)})
		if err != nil {
			return &permanentError{err}
		}
		return n.post(ctx, d.dest.URL, body, nil)
	case KindEvents:
		return n.recordEvent(d)
	}
	return &permanentError{fmt.Errorf("unknown destination kind %q", d.dest.Kind)}
}

// post sends body; 5xx, 408, 429 and transport errors may pass, other statuses (a redirect
// too: it is not followed) are final. A Retry-After of a 429 or 503 is returned with the error.
func (n *Notifier) post(ctx context.Context, target string, body []byte, headers map[string]string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return &permanentError{errors.New("invalid request")} // the URL may be a secret
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "navarch-notifications")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := n.opts.HTTPClient.Do(req)
	if err != nil {
		if uerr, ok := errors.AsType[*url.Error](err); ok {
			err = uerr.Err // drop the URL, which may be a secret
		}
		return fmt.Errorf("POST: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests:
		err := fmt.Errorf("the receiver answered %s", resp.Status)
		if after, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return &retryAfterError{err: err, after: after}
		}
		return err
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		// The Location is not repeated: it may hold a token as the URL does.
		return &permanentError{fmt.Errorf("the receiver answered %s; redirects are not followed", resp.Status)}
	}
	return &permanentError{fmt.Errorf("the receiver answered %s", resp.Status)}
}

// retryAfter parses a Retry-After header, seconds or an HTTP date, into a wait from now,
// at most maxRetryAfter.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	var wait time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		wait = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		wait = max(at.Sub(now), 0)
	} else {
		return 0, false
	}
	return min(wait, maxRetryAfter), true
}

// alreadyRecorded lists the triggers for which the controllers record an Event on every
// transition anyway (OperationSucceeded, OperationFailed/OperationError, RolloutHalted,
// RolloutCompleted): an events destination does not record a second one.
var alreadyRecorded = map[Trigger]bool{SyncSucceeded: true, SyncFailed: true, RolloutHalted: true, RolloutCompleted: true}

// recordEvent records a Kubernetes Event for d on its object, with the trigger as reason.
func (n *Notifier) recordEvent(d *delivery) error {
	if alreadyRecorded[d.msg.Trigger] {
		return errSkipped
	}
	if n.opts.Events == nil {
		return &permanentError{errors.New("no Event recorder")}
	}
	typ := corev1.EventTypeNormal
	if d.msg.Trigger.Warning() {
		typ = corev1.EventTypeWarning
	}
	n.opts.Events.Eventf(d.object, nil, typ, string(d.msg.Trigger), "Notify", "%s", d.msg.Summary)
	return nil
}
