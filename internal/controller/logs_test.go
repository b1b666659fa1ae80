package controller

import (
	"fmt"
	"sync"

	"github.com/go-logr/logr"
)

// controllerLogs records the Info lines the controller under test logs, with their key/value
// pairs, so tests can check what an operator reading the log would be told. Everything is also
// passed on to the test's own logger.
var controllerLogs = &logRecorder{}

// logEntry is one recorded Info line.
type logEntry struct {
	msg    string
	values map[string]any
}

type logRecorder struct {
	mu      sync.Mutex
	entries []logEntry
}

// lines returns the entries logged with msg whose key equals value (compared as text, so a
// klog.ObjectRef matches "namespace/name"), oldest first.
func (r *logRecorder) lines(msg, key, value string) []logEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logEntry
	for _, e := range r.entries {
		if e.msg == msg && fmt.Sprint(e.values[key]) == value {
			out = append(out, e)
		}
	}
	return out
}

func (r *logRecorder) record(msg string, values map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, logEntry{msg: msg, values: values})
}

// wrap returns a logger that records the Info lines of verbosity 0 and passes every line on to
// next.
func (r *logRecorder) wrap(next logr.Logger) logr.Logger {
	return logr.New(&recordingSink{next: next.GetSink(), rec: r})
}

type recordingSink struct {
	next   logr.LogSink
	rec    *logRecorder
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
