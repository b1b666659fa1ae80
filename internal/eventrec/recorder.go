// Package eventrec writes the controller's events.k8s.io/v1 Events: what happened to an
// Application, an ApplicationSet or a notification configuration, for `kubectl describe`
// and `kubectl get events`.
//
// It replaces client-go's event broadcaster, which keeps a full copy of every Event it wrote
// for 6–12 minutes to count repeats: about 1 KB an Event, so 10 MB of heap after 10,000
// Applications synced once. A Recorder remembers a repeat by a hash of what makes two Events
// the same and the name of the Event it wrote: about a tenth of that.
package eventrec

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/reference"
)

const (
	// SeriesWindow is how long a repeat of an Event counts into the one already written (its
	// series) rather than making a new one, as the Events API's own recorders do.
	SeriesWindow = 6 * time.Minute
	// writers is how many Events are written at once. Each writer has its share of the queue
	// and of the series, and writes the Events of the objects that fall to it, so that the
	// Events about one object are written in order. A busy management apiserver answers an
	// Event in a fifth of a second or more, while a sync of thousands of Applications records
	// dozens a second: in the fleet benchmark's sync of 10,000 (about 60 a second), one writer
	// wrote about 1,000 and dropped the rest, and 8 writers dropped 2,300.
	writers = 32
	// queueLength bounds the Events waiting to be written, queueLength/writers for each
	// writer.
	queueLength = 4096
	// QueueWait is how long recording an Event waits for room in its writer's queue. A burst
	// of syncs that records Events faster than the management apiserver takes them then slows
	// to its pace instead of losing them (32 writers without the wait dropped 381 and 696 of
	// the 10,000 Events of the benchmark's commit, at 100 a second, and with a wait of 2 s,
	// 158: a busy apiserver's answer, or a retry's pause, can hold a writer that long). A
	// writer that has not taken an Event for this long, longer than its retries' pauses, is
	// stuck on an apiserver that does not answer: new Events are then dropped, and the drop is
	// logged, rather than holding up every sync.
	QueueWait = 10 * time.Second
	// noteLimit is the Events API's limit on a note, in bytes.
	noteLimit = 1024
	// attempts and retryPause bound how long one Event may hold up the others when the
	// apiserver does not answer.
	attempts   = 3
	retryPause = 2 * time.Second
)

// Recorder records Events on the management cluster. It implements client-go's
// events.EventRecorder and controller-runtime's recorder.EventRecorder. Add it to the
// manager, which runs its writer (Start); it records on every replica.
type Recorder struct {
	client     eventsclient.EventsV1Interface
	scheme     *runtime.Scheme
	controller string // reportingController
	instance   string // reportingInstance
	log        logr.Logger
	now        func() time.Time

	seed      maphash.Seed // picks the writer of an object's Events
	writers   []*writer
	queueWait time.Duration // QueueWait, but in tests

	dropMu   sync.Mutex
	dropped  int  // Events dropped since the last report
	dropping bool // the first drop of the spell was logged
}

// writer writes the Events of its share of the objects, one at a time.
type writer struct {
	r     *Recorder
	queue chan *eventsv1.Event
	// series is read and written only by the writer's goroutine.
	series map[[sha256.Size]byte]*series
}

// series is an Event written within the series window and how often it happened.
type series struct {
	namespace, name string
	count           int32
	last            time.Time
}

// New returns a Recorder that reports Events as controller (a qualified name such as
// "navarch") from this host.
func New(client eventsclient.EventsV1Interface, scheme *runtime.Scheme, controller string, log logr.Logger) *Recorder {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	r := &Recorder{
		client:     client,
		scheme:     scheme,
		controller: controller,
		instance:   controller + "-" + host,
		log:        log,
		now:        time.Now,
		seed:       maphash.MakeSeed(),
		queueWait:  QueueWait,
	}
	for range writers {
		r.writers = append(r.writers, &writer{
			r:      r,
			queue:  make(chan *eventsv1.Event, queueLength/writers),
			series: map[[sha256.Size]byte]*series{},
		})
	}
	return r
}

// writerOf returns the writer of the Events about ref's object.
func (r *Recorder) writerOf(ref *corev1.ObjectReference) *writer {
	var h maphash.Hash
	h.SetSeed(r.seed)
	_, _ = h.WriteString(ref.Namespace)
	_ = h.WriteByte('/')
	_, _ = h.WriteString(ref.Name)
	return r.writers[h.Sum64()%uint64(len(r.writers))]
}

// Eventf records an Event about regarding (and related, which may be nil): its type
// (Normal or Warning), reason, action and note, formatted with args. The Event is written in
// the background; Eventf returns once it is queued, or dropped after QueueWait when its
// writer's queue stays full.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.AnnotatedEventf(regarding, related, nil, eventtype, reason, action, note, args...)
}

// AnnotatedEventf is Eventf with annotations on the Event.
func (r *Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	ev, err := r.event(regarding, related, annotations, eventtype, reason, action, fmt.Sprintf(note, args...))
	if err != nil {
		r.log.Error(err, "Could not record an Event", "reason", reason, "action", action)
		return
	}
	w := r.writerOf(&ev.Regarding)
	select {
	case w.queue <- ev:
		return
	default:
	}
	wait := time.NewTimer(r.queueWait)
	defer wait.Stop()
	select {
	case w.queue <- ev:
	case <-wait.C:
		r.drop(ev)
	}
}

// drop counts an Event its writer's queue had no room for. The first drop after a quiet spell
// is logged at once; the ones that follow are counted, and Start logs their number at its
// next report, so that an apiserver outage costs the log a line a minute, not one per Event.
func (r *Recorder) drop(ev *eventsv1.Event) {
	r.dropMu.Lock()
	first := r.dropped == 0 && !r.dropping
	if first {
		r.dropping = true
	} else {
		r.dropped++
	}
	r.dropMu.Unlock()
	if first {
		r.log.Info("Dropped an Event: the management apiserver is behind on writing them",
			"reason", ev.Reason, "regarding", klogRef(ev.Regarding), "waiting", r.waiting())
	}
}

// reportDrops logs how many Events were dropped since the last report, if any, and ends a
// spell of drops when there were none.
func (r *Recorder) reportDrops() {
	r.dropMu.Lock()
	n := r.dropped
	r.dropped = 0
	r.dropping = n > 0
	r.dropMu.Unlock()
	if n > 0 {
		r.log.Info("Dropped Events: the management apiserver is behind on writing them", "dropped", n, "waiting", r.waiting())
	}
}

// waiting is how many Events are queued.
func (r *Recorder) waiting() int {
	n := 0
	for _, w := range r.writers {
		n += len(w.queue)
	}
	return n
}

// event builds the Event to write, named as the Events API's recorders name theirs.
func (r *Recorder) event(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string) (*eventsv1.Event, error) {
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		return nil, fmt.Errorf("eventrec: type %q is neither %s nor %s", eventtype, corev1.EventTypeNormal, corev1.EventTypeWarning)
	}
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		return nil, fmt.Errorf("eventrec: the regarding object: %w", err)
	}
	var rel *corev1.ObjectReference
	if related != nil {
		if rel, err = reference.GetReference(r.scheme, related); err != nil {
			return nil, fmt.Errorf("eventrec: the related object: %w", err)
		}
	}
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	now := r.now()
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()),
			Namespace:   ns,
			Annotations: annotations,
		},
		EventTime:           metav1.MicroTime{Time: now},
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             rel,
		Note:                truncate(note, noteLimit),
		Type:                eventtype,
	}, nil
}

// NeedLeaderElection says every replica writes the Events of its own work.
func (r *Recorder) NeedLeaderElection() bool { return false }

// drainTime is how long the writers go on writing the Events already queued, and the ones in
// flight, once the manager stops.
const drainTime = 5 * time.Second

// Start runs the writers until ctx ends; they then write the Events already queued, and finish
// the ones in flight, for at most drainTime more.
func (r *Recorder) Start(ctx context.Context) error {
	// The writes outlive ctx by drainTime, so that an Event in flight when the manager stops
	// is not abandoned with its request.
	writes, cancelWrites := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWrites()
	var wg sync.WaitGroup
	var dropped atomic.Int64 // at shutdown, by all writers
	for _, w := range r.writers {
		wg.Go(func() { dropped.Add(int64(w.run(ctx, writes))) })
	}
	report := time.NewTicker(SeriesWindow / 6)
	defer report.Stop()
	for {
		select {
		case <-report.C:
			r.reportDrops()
		case <-ctx.Done():
			stop := time.AfterFunc(drainTime, cancelWrites)
			defer stop.Stop()
			wg.Wait()
			if n := dropped.Load(); n > 0 {
				r.log.Info("Dropped the Events still queued at shutdown", "count", n)
			}
			return nil
		}
	}
}

// run writes the writer's queued Events with writes, and forgets its past series, until ctx
// ends; then it drains the queue. It returns how many Events it dropped at the end, not
// written before writes ended.
func (w *writer) run(ctx, writes context.Context) (dropped int) {
	sweep := time.NewTicker(SeriesWindow / 6)
	defer sweep.Stop()
	for {
		select {
		case ev := <-w.queue:
			if ctx.Err() != nil {
				return w.drain(writes, ev) // taken as the manager stopped
			}
			w.write(writes, ev)
		case <-sweep.C:
			w.forget()
		case <-ctx.Done():
			return w.drain(writes, nil)
		}
	}
}

// drain writes first (when not nil) and what is left in the writer's queue when the manager
// stops, until writes ends, and returns how many Events it left unwritten.
func (w *writer) drain(writes context.Context, first *eventsv1.Event) (dropped int) {
	for ev := first; ; ev = nil {
		if ev == nil {
			select {
			case ev = <-w.queue:
			default:
				return 0
			}
		}
		if writes.Err() != nil {
			return len(w.queue) + 1
		}
		w.write(writes, ev)
	}
}

// forget drops the series whose window has passed: their next repeat is a new Event.
func (w *writer) forget() {
	cutoff := w.r.now().Add(-SeriesWindow)
	for k, s := range w.series {
		if s.last.Before(cutoff) {
			delete(w.series, k)
		}
	}
}

// write creates ev or, when the same Event was written within the series window, counts it
// into that one.
func (w *writer) write(ctx context.Context, ev *eventsv1.Event) {
	r := w.r
	key := seriesKey(ev)
	at := ev.EventTime.Time
	if s, ok := w.series[key]; ok && at.Sub(s.last) < SeriesWindow {
		s.count++
		s.last = at
		err := r.retry(ctx, func() error { return r.patchSeries(ctx, s) })
		if err == nil {
			r.log.V(1).Info("Event", "type", ev.Type, "reason", ev.Reason, "regarding", klogRef(ev.Regarding), "note", ev.Note, "count", s.count)
			return
		}
		if !apierrors.IsNotFound(err) {
			r.log.Error(err, "Could not count a repeated Event", "reason", ev.Reason, "regarding", klogRef(ev.Regarding))
			return
		}
		// The Event expired or was deleted: write it anew.
		delete(w.series, key)
	}
	err := r.retry(ctx, func() error {
		_, err := r.client.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Another Event about the same object, recorded in the same nanosecond (by
			// another replica, or on a coarse clock): the next nanosecond's name.
			ev.Name = fmt.Sprintf("%s.%x", ev.Regarding.Name, ev.EventTime.UnixNano()+1)
			_, err = r.client.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
		}
		return err
	})
	if err != nil {
		r.log.Error(err, "Could not write an Event", "reason", ev.Reason, "regarding", klogRef(ev.Regarding))
		return
	}
	w.series[key] = &series{namespace: ev.Namespace, name: ev.Name, count: 1, last: at}
	r.log.V(1).Info("Event", "type", ev.Type, "reason", ev.Reason, "regarding", klogRef(ev.Regarding), "note", ev.Note)
}

// patchSeries sets the count and last time of s's Event.
func (r *Recorder) patchSeries(ctx context.Context, s *series) error {
	patch, err := json.Marshal(map[string]any{"series": eventsv1.EventSeries{
		Count:            s.count,
		LastObservedTime: metav1.MicroTime{Time: s.last},
	}})
	if err != nil {
		return err
	}
	_, err = r.client.Events(s.namespace).Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// retry runs write until it succeeds, fails for good (the Event is invalid, exists or is
// gone), or has been tried `attempts` times.
func (r *Recorder) retry(ctx context.Context, write func() error) error {
	var err error
	for i := range attempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(i) * retryPause):
			}
		}
		err = write()
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err) ||
			apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
			return err
		}
	}
	return err
}

// seriesKey is what makes two Events the same: who reports it, about what, and what it says.
func seriesKey(ev *eventsv1.Event) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	ref := func(r *corev1.ObjectReference) {
		if r == nil {
			field("")
			return
		}
		for _, s := range []string{r.APIVersion, r.Kind, r.Namespace, r.Name, string(r.UID), r.FieldPath} {
			field(s)
		}
	}
	for _, s := range []string{ev.ReportingController, ev.Type, ev.Reason, ev.Action, ev.Note} {
		field(s)
	}
	ref(&ev.Regarding)
	ref(ev.Related)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// klogRef names an object as namespace/name for the log.
func klogRef(r corev1.ObjectReference) string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// truncate cuts s to at most limit bytes, on a rune boundary.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
