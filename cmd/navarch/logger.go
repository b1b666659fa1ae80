package main

import (
	"github.com/go-logr/logr"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// newLogger returns the controller's logger for the --zap-* flags: controller-runtime's, never
// sampled. At the default verbosity controller-runtime's production logger keeps, of each
// message, the first 100 lines of every second and one in 100 after that: in the fleet
// benchmark's syncs it dropped about 250 of 20,000 "Operation succeeded" lines. The controller
// logs each operation it starts, retries, fails or finishes, and none may go missing (the
// sampler's counters also took 450 KB). controller-runtime adds no sampler when the level
// enables V(2) lines, so the logger is made at that level, which is then set to the flags'.
func newLogger(o zap.Options) logr.Logger {
	want := o.Level
	if want == nil {
		want = zapcore.InfoLevel
		if o.Development {
			want = zapcore.DebugLevel
		}
	}
	level := uberzap.NewAtomicLevelAt(zapcore.Level(-2))
	o.Level = level
	logger := zap.New(zap.UseFlagOptions(&o))
	level.SetLevel(lowestEnabled(want))
	return logger
}

// lowestEnabled is the most verbose level e enables.
func lowestEnabled(e zapcore.LevelEnabler) zapcore.Level {
	for l := zapcore.Level(-128); l < zapcore.FatalLevel; l++ {
		if e.Enabled(l) {
			return l
		}
	}
	return zapcore.FatalLevel
}
