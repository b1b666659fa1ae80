package main

import (
	"bytes"
	"strings"
	"testing"

	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestTheControllerLogsEveryLine: a burst of one message is logged whole (controller-runtime's
// production logger would keep 100 of it in a second, and one in 100 after that), at the
// verbosity the flags ask for.
func TestTheControllerLogsEveryLine(t *testing.T) {
	for name, tc := range map[string]struct {
		opts  zap.Options
		debug bool
	}{
		"the defaults":      {},
		"--zap-log-level=1": {opts: zap.Options{Level: uberzap.NewAtomicLevelAt(zapcore.DebugLevel)}, debug: true},
		"--zap-devel":       {opts: zap.Options{Development: true}, debug: true},
	} {
		var out bytes.Buffer
		tc.opts.DestWriter = &out
		logger := newLogger(tc.opts)
		for range 1000 {
			logger.Info("Operation succeeded", "application", "fleet/a000-c000")
		}
		logger.V(1).Info("debug line")
		logger.V(2).Info("verbose line")
		if got := strings.Count(out.String(), "Operation succeeded"); got != 1000 {
			t.Errorf("%s: %d of 1,000 lines logged", name, got)
		}
		if got := strings.Contains(out.String(), "debug line"); got != tc.debug {
			t.Errorf("%s: V(1) logged %t, want %t", name, got, tc.debug)
		}
		if strings.Contains(out.String(), "verbose line") {
			t.Errorf("%s: V(2) logged, which no flag asked for", name)
		}
	}
}
