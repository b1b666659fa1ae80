package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// cgroupMemoryMax is the cgroup v2 file holding the container's memory limit.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// setMemoryLimit makes the Go runtime collect garbage harder as the process nears its
// container's memory limit, instead of letting the heap double past it and the kernel kill
// the controller: unless GOMEMLIMIT is set, the soft limit becomes 90% of the cgroup's
// memory.max. Without a limit (or cgroup v2) nothing changes.
func setMemoryLimit(log logr.Logger, path string) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil || limit <= 0 {
		return // "max": no limit
	}
	soft := limit / 10 * 9
	debug.SetMemoryLimit(soft)
	log.Info("Go memory limit set from the container's", "memoryMax", limit, "goMemLimit", soft)
}
