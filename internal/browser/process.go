package browser

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// processesUsing returns the ids of the processes whose command line has the argument
// --user-data-dir=dir. Every process of one Chromium (browser, renderers, GPU, zygote) has it,
// and dir is unique to one Browser, so this finds that browser's processes and no one else's.
// It reads /proc, and finds nothing where there is none.
func processesUsing(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte("--user-data-dir=" + dir)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue // gone meanwhile
		}
		for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
			if bytes.Equal(arg, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// waitGone waits up to timeout for the processes of the browser with profile dir to exit.
// Those still running then are killed, and returned.
func waitGone(dir string, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		pids := processesUsing(dir)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return pids
		}
		time.Sleep(50 * time.Millisecond)
	}
}
