package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
)

// The controller's soft memory limit follows the container's: 90% of memory.max, nothing for
// "max" or when GOMEMLIMIT says otherwise.
func TestMemoryLimitFollowsTheContainers(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	dir := t.TempDir()
	file := func(content string) string {
		p := filepath.Join(dir, "memory.max")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	setMemoryLimit(logr.Discard(), file("max\n"))
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with memory.max \"max\" the limit became %d, want it unchanged (%d)", got, before)
	}
	setMemoryLimit(logr.Discard(), file("536870912\n"))
	if got, want := debug.SetMemoryLimit(-1), int64(536870912/10*9); got != want {
		t.Errorf("with memory.max 512Mi the limit is %d, want %d", got, want)
	}
	debug.SetMemoryLimit(before)
	t.Setenv("GOMEMLIMIT", "1GiB")
	setMemoryLimit(logr.Discard(), file("536870912\n"))
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with GOMEMLIMIT set the limit became %d, want it unchanged", got)
	}
}
