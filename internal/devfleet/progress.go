package devfleet

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// progress prints one timestamped line per step, and is also a logr sink so the clusters'
// own progress messages read the same way: `[  4.4s] dev-1: cluster ready (took=4.3s)`.
type progress struct {
	out   io.Writer
	start time.Time
	mu    *sync.Mutex
}

func newProgress(out io.Writer) *progress {
	return &progress{out: out, start: time.Now(), mu: &sync.Mutex{}}
}

func (p *progress) say(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "[%5.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

// logger returns a logr.Logger printing through p.
func (p *progress) logger() logr.Logger { return logr.New(&progressSink{p: p}) }

type progressSink struct {
	p      *progress
	name   string
	values []any
}

func (s *progressSink) Init(logr.RuntimeInfo)  {}
func (s *progressSink) Enabled(level int) bool { return level == 0 }

func (s *progressSink) Info(_ int, msg string, kv ...any) { s.p.say("%s", s.line(msg, kv)) }

func (s *progressSink) Error(err error, msg string, kv ...any) {
	s.p.say("%s: %v", s.line(msg, kv), err)
}

func (s *progressSink) line(msg string, kv []any) string {
	var b strings.Builder
	if s.name != "" {
		b.WriteString(s.name + ": ")
	}
	b.WriteString(msg)
	all := append(append([]any{}, s.values...), kv...)
	var pairs []string
	for i := 0; i+1 < len(all); i += 2 {
		if k := fmt.Sprint(all[i]); k != "cluster" { // the name already says which cluster
			pairs = append(pairs, fmt.Sprintf("%s=%v", k, all[i+1]))
		}
	}
	if len(pairs) > 0 {
		b.WriteString(" (" + strings.Join(pairs, ", ") + ")")
	}
	return b.String()
}

func (s *progressSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(append([]any{}, s.values...), kv...)
	return &c
}

func (s *progressSink) WithName(name string) logr.LogSink {
	c := *s
	if c.name != "" {
		name = c.name + "/" + name
	}
	c.name = name
	return &c
}
