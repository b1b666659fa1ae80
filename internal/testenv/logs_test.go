package testenv

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func TestLogRecorderRecordsInfoLinesAndPassesEverythingOn(t *testing.T) {
	var passed []string
	next := funcr.New(func(prefix, args string) { passed = append(passed, prefix+" "+args) }, funcr.Options{Verbosity: 1})
	logs := &LogRecorder{}
	log := logs.Wrap(next).WithName("ctl").WithValues("application", "ns/a", "n", 1)

	log.Info("Applied", "n", 2)
	log.V(1).Info("Applied", "debug", true)
	log.V(2).Info("Applied", "hidden", true)
	log.Error(errors.New("boom"), "Failed")
	logs.Wrap(next).Info("Applied", "application", "ns/b")

	lines := logs.Lines("Applied", "application", "ns/a")
	if len(lines) != 1 {
		t.Fatalf("Lines(Applied, application, ns/a) = %+v, want the one line of verbosity 0", lines)
	}
	if got := lines[0]; got.Msg != "Applied" || got.Values["n"] != 2 || len(got.Values) != 2 {
		t.Errorf("recorded %+v, want msg Applied with application ns/a and n 2 (the later pair wins)", got)
	}
	if got := logs.Lines("Applied", "application", "ns/b"); len(got) != 1 {
		t.Errorf("Lines(Applied, application, ns/b) = %+v, want one line", got)
	}
	if got := logs.Lines("Failed", "application", "ns/a"); len(got) != 0 {
		t.Errorf("Error lines are not recorded, got %+v", got)
	}
	if got := logs.Lines("Applied", "application", "ns/c"); got != nil {
		t.Errorf("Lines for a value nobody logged = %+v, want none", got)
	}

	// Verbosity 0 and 1 and the error reach the wrapped logger (its verbosity is 1), verbosity
	// 2 does not; the name and values of the wrapping logger are passed on too.
	if len(passed) != 4 {
		t.Fatalf("passed on %d lines, want 4: %q", len(passed), passed)
	}
	if want := `ctl "level"=1 "msg"="Applied" "application"="ns/a" "n"=1 "debug"=true`; !slices.Contains(passed, want) {
		t.Errorf("the V(1) line was not passed on with its name and values: %q", passed)
	}
}
