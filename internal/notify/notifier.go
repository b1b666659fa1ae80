package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Options configure a Notifier. The zero value of each field has a sensible default.
type Options struct {
	// Logger logs each delivery's outcome and dropped notifications.
	Logger logr.Logger
	// Events records the Events of events destinations; nil records none.
	Events events.EventRecorder
	// HTTPClient posts to webhooks. Default: a client with a 10s timeout. Redirects are
	// never followed, whatever its CheckRedirect (see refuseRedirect).
	HTTPClient *http.Client
	// QueueSize bounds the deliveries waiting; beyond it, new ones are dropped. Default 1000.
	QueueSize int
	// Workers deliver in parallel. Default 4.
	Workers int
	// Backoff is the wait before the first retry; it doubles for each next one, up to
	// maxBackoff. A receiver's Retry-After, when longer, is waited instead. Default 1s.
	Backoff time.Duration
	// Attempts is the number of attempts of one delivery. Default 5.
	Attempts int
	// Whole returns the whole of an observed Application, for the notifications of its
	// transitions, whose templates may read any field. The controller's cache keeps the lists
	// of an Application's status encoded, and finding the transitions reads none of them, so
	// only an Application that fires a trigger is decoded. Default: the Application as
	// observed.
	Whole func(*navarchv1.Application) (*navarchv1.Application, error)
}

func (o *Options) defaults() {
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if o.HTTPClient != nil {
		c := *o.HTTPClient
		client = &c
	}
	client.CheckRedirect = refuseRedirect
	o.HTTPClient = client
	if o.QueueSize <= 0 {
		o.QueueSize = 1000
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Whole == nil {
		o.Whole = func(app *navarchv1.Application) (*navarchv1.Application, error) { return app, nil }
	}
}

// Notifier observes Applications and ApplicationSets, turns their transitions into
// notifications for the subscriptions that select them, and delivers those on a bounded
// queue, so that observing never waits for a destination.
type Notifier struct {
	opts    Options
	tracker *Tracker
	config  atomic.Pointer[Config]
	queue   chan *delivery
	// mu guards retries and stopped. retries are the timers of deliveries waiting to be
	// retried; Start stops them when it returns, so that none outlives the Notifier.
	mu      sync.Mutex
	retries map[*delivery]*time.Timer
	stopped bool
}

// maxBackoff bounds the doubling backoff between two attempts.
const maxBackoff = 5 * time.Minute

// delivery is one message for one destination.
type delivery struct {
	dest    Destination
	msg     Message
	object  runtime.Object // the Application or ApplicationSet, for Events and logs
	key     klog.ObjectRef
	attempt int
}

// New returns a Notifier with an empty configuration (nothing is sent until SetConfig).
func New(opts Options) *Notifier {
	opts.defaults()
	n := &Notifier{opts: opts, tracker: NewTracker(), queue: make(chan *delivery, opts.QueueSize), retries: map[*delivery]*time.Timer{}}
	n.config.Store(&Config{})
	return n
}

// SetConfig replaces the configuration; deliveries already queued keep the old one.
func (n *Notifier) SetConfig(c *Config) { n.config.Store(c) }

// Application observes a state of app (a new object, an update): its transitions are queued
// for delivery. It never blocks.
func (n *Notifier) Application(app *navarchv1.Application) {
	triggers := n.tracker.Application(app)
	if len(triggers) == 0 {
		return
	}
	app, err := n.opts.Whole(app)
	if err != nil {
		n.opts.Logger.Error(err, "Notifications of an Application dropped", "triggers", triggers)
		return
	}
	target := ApplicationTarget(app)
	now := time.Now()
	for _, t := range triggers {
		n.route(t, target, app.DeepCopy(), func() Message { return ApplicationMessage(t, app, now) })
	}
}

// ApplicationSet observes a state of set.
func (n *Notifier) ApplicationSet(set *navarchv1.ApplicationSet) {
	triggers := n.tracker.ApplicationSet(set)
	if len(triggers) == 0 {
		return
	}
	target := ApplicationSetTarget(set)
	now := time.Now()
	for _, t := range triggers {
		n.route(t, target, set.DeepCopy(), func() Message { return ApplicationSetMessage(t, set, now) })
	}
}

// Forget drops the remembered state of a deleted object.
func (n *Notifier) Forget(uid types.UID) { n.tracker.Forget(uid) }

// route queues trigger t of an object for each destination of each subscription that wants
// it; a destination named by several matching subscriptions gets one message.
func (n *Notifier) route(t Trigger, target Target, obj runtime.Object, message func() Message) {
	cfg := n.config.Load()
	var sent []string
	for _, sub := range cfg.Subscriptions {
		if !slices.Contains(sub.Triggers, t) || !sub.Selector.Matches(target) {
			continue
		}
		for _, name := range sub.Destinations {
			dest, ok := cfg.Destinations[name]
			if !ok || slices.Contains(sent, name) {
				continue
			}
			sent = append(sent, name)
			msg := message()
			msg.ID, msg.Subscription = newID(), sub.Name
			n.enqueue(&delivery{dest: dest, msg: msg, object: obj, key: objectRef(msg)})
		}
	}
}

func objectRef(m Message) klog.ObjectRef {
	if a := m.Application; a != nil {
		return klog.ObjectRef{Namespace: a.Namespace, Name: a.Name}
	}
	return klog.ObjectRef{Namespace: m.ApplicationSet.Namespace, Name: m.ApplicationSet.Name}
}

// enqueue adds d to the queue, or drops it when the queue is full.
func (n *Notifier) enqueue(d *delivery) {
	select {
	case n.queue <- d:
	default:
		droppedTotal.WithLabelValues(d.dest.Name, string(d.msg.Trigger)).Inc()
		n.opts.Logger.Info("Notification dropped: the delivery queue is full", n.logValues(d)...)
	}
}

// Start delivers queued notifications until ctx is done; it runs Options.Workers workers.
// When it returns, no worker runs and no retry is pending: deliveries still queued or
// waiting to be retried are abandoned.
func (n *Notifier) Start(ctx context.Context) error {
	defer n.stopRetries()
	var wg sync.WaitGroup
	for range n.opts.Workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case d := <-n.queue:
					n.deliver(ctx, d)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// deliver makes one attempt, and schedules the next one after a failure that may pass.
func (n *Notifier) deliver(ctx context.Context, d *delivery) {
	d.attempt++
	trigger := string(d.msg.Trigger)
	err := n.send(ctx, d)
	if err == nil {
		sentTotal.WithLabelValues(d.dest.Name, trigger).Inc()
		n.opts.Logger.Info("Notification sent", n.logValues(d)...)
		return
	}
	if errors.Is(err, errSkipped) {
		return
	}
	attemptErrors.WithLabelValues(d.dest.Name, trigger).Inc()
	var perm *permanentError
	if errors.As(err, &perm) || d.attempt >= n.opts.Attempts || ctx.Err() != nil {
		failedTotal.WithLabelValues(d.dest.Name, trigger).Inc()
		n.opts.Logger.Error(err, "Notification failed", n.logValues(d)...)
		return
	}
	wait := backoff(n.opts.Backoff, d.attempt)
	if ra, ok := errors.AsType[*retryAfterError](err); ok && ra.after > wait {
		wait = ra.after
	}
	n.opts.Logger.Info("Notification attempt failed; retrying", append(n.logValues(d), "error", err.Error(), "retryIn", wait.String())...)
	n.retryAfter(d, wait)
}

// backoff is the wait after the given failed attempt: base, doubled for each attempt
// after the first, at most maxBackoff.
func backoff(base time.Duration, attempt int) time.Duration {
	wait := base
	for i := 1; i < attempt && wait < maxBackoff; i++ {
		wait *= 2
	}
	return min(wait, maxBackoff)
}

// retryAfter queues d again after wait, unless Start has returned by then.
func (n *Notifier) retryAfter(d *delivery, wait time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return
	}
	n.retries[d] = time.AfterFunc(wait, func() {
		n.mu.Lock()
		_, pending := n.retries[d]
		delete(n.retries, d)
		n.mu.Unlock()
		if pending {
			n.enqueue(d)
		}
	})
}

// stopRetries abandons the retries waiting and refuses new ones.
func (n *Notifier) stopRetries() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopped = true
	for d, timer := range n.retries {
		timer.Stop()
		delete(n.retries, d)
	}
}

// pendingRetries counts the deliveries waiting to be retried.
func (n *Notifier) pendingRetries() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.retries)
}

func (n *Notifier) logValues(d *delivery) []any {
	kind := "application"
	if d.msg.ApplicationSet != nil {
		kind = "applicationSet"
	}
	return []any{kind, d.key, "trigger", d.msg.Trigger, "destination", d.dest.Name, "subscription", d.msg.Subscription,
		"delivery", d.msg.ID, "attempt", d.attempt}
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
