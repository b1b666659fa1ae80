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
	// HeaderSignature carries "sha256=" and the hex HMAC-SHA256 of the body, keyed with the
	// destination's hmacSecretKey.
	HeaderSignature = "X-Navarch-Signature"
	// HeaderDelivery carries the message's id, the same for every retry.
	HeaderDelivery = "X-Navarch-Delivery"
	// HeaderTimestamp carries the Unix time of the attempt, in seconds.
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

// Sign returns the value of HeaderSignature for body and key.
func Sign(key, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

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
		headers := map[string]string{HeaderDelivery: d.msg.ID, HeaderTrigger: string(d.msg.Trigger)}
		if len(d.dest.HMACKey) > 0 {
			headers[HeaderSignature] = Sign(d.dest.HMACKey, body)
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

// post sends body; 5xx, 408, 429 and transport errors may pass, other statuses are final.
func (n *Notifier) post(ctx context.Context, target string, body []byte, headers map[string]string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return &permanentError{errors.New("invalid request")} // the URL may be a secret
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "navarch-notifications")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(time.Now().Unix(), 10))
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
		return fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return &permanentError{fmt.Errorf("the receiver answered %s", resp.Status)}
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
