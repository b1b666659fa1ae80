package testenv

import (
	"fmt"
	"sync"

	"github.com/go-logr/logr"
)

// LogRecorder records the Info lines of verbosity 0 a controller under test logs, with their
// key/value pairs (those of WithValues included), as an operator reading its log at the
// default level would see them, so tests can check what the log tells. Wrap puts it in front
// of a logger; every line is still passed on to that logger. The zero value is ready to use
// and it is safe for concurrent use.
//
//	logs := &testenv.LogRecorder{}
//	opts.Logger = logs.Wrap(env.Logger)
//	...
//	lines := logs.Lines("Applied ApplicationSet", "applicationSet", ns+"/s")
type LogRecorder struct {
	mu      sync.Mutex
	entries []LogEntry
}

// LogEntry is one recorded Info line.
type LogEntry struct {
	// Msg is the line's message.
	Msg string
	// Values are its key/value pairs, those of WithValues first, keyed by the key as text;
	// a later pair with the same key wins.
	Values map[string]any
}

// Lines returns the entries logged with msg whose key equals value (compared as text, so a
// klog.ObjectRef matches "namespace/name"), oldest first.
func (r *LogRecorder) Lines(msg, key, value string) []LogEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []LogEntry
	for _, e := range r.entries {
		if e.Msg == msg && fmt.Sprint(e.Values[key]) == value {
			out = append(out, e)
		}
	}
	return out
}

func (r *LogRecorder) record(msg string, values map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, LogEntry{Msg: msg, Values: values})
}

// Wrap returns a logger that records the Info lines of verbosity 0 into r and passes every
// line on to next. It passes them to a copy of next's sink, because logr.New calls the new
// sink's Init, which changes the sink it passes on to, while next may be logging elsewhere (a
// previous test's controller, stopping).
func (r *LogRecorder) Wrap(next logr.Logger) logr.Logger {
	return logr.New(&recordingSink{next: next.GetSink().WithValues(), rec: r})
}

// recordingSink is the logr.LogSink of Wrap.
type recordingSink struct {
	next   logr.LogSink
	rec    *LogRecorder
	values []any // from WithValues, in order
}

func (s *recordingSink) Init(info logr.RuntimeInfo) { s.next.Init(info) }

func (s *recordingSink) Enabled(level int) bool { return level == 0 || s.next.Enabled(level) }

func (s *recordingSink) Info(level int, msg string, kv ...any) {
	if level == 0 {
		values := map[string]any{}
		all := append(append([]any{}, s.values...), kv...)
		for i := 0; i+1 < len(all); i += 2 {
			values[fmt.Sprint(all[i])] = all[i+1]
		}
		s.rec.record(msg, values)
	}
	if s.next.Enabled(level) {
		s.next.Info(level, msg, kv...)
	}
}

func (s *recordingSink) Error(err error, msg string, kv ...any) { s.next.Error(err, msg, kv...) }

func (s *recordingSink) WithValues(kv ...any) logr.LogSink {
	return &recordingSink{next: s.next.WithValues(kv...), rec: s.rec, values: append(append([]any{}, s.values...), kv...)}
}

func (s *recordingSink) WithName(name string) logr.LogSink {
	return &recordingSink{next: s.next.WithName(name), rec: s.rec, values: s.values}
}
