package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one binary a cluster started. Its stdout and stderr go to <dir>/<name>.log.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string

	// path, args and env are what it was started with, so it can be started again.
	path      string
	args, env []string

	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // the result of cmd.Wait, set before done is closed
}

// startProcess starts the binary at path in its own process group, with its output appended to
// <dir>/<name>.log. On Linux the process also gets SIGKILL when the process that started it
// dies, so a killed test binary leaves nothing behind.
func startProcess(name, path, dir string, args, env []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	// The child has its own copy of the descriptor once started.
	defer logFile.Close()

	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := spawn(cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}

	p := &process{name: name, cmd: cmd, logPath: logPath, path: path, args: args, env: env, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited (and been reaped).
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes an unexpected exit, with the end of the process's log.
func (p *process) exitError() error {
	return fmt.Errorf("%s (pid %d) exited: %w; end of %s:\n%s", p.name, p.pid(), p.waitErr, p.logPath, p.logTail(20))
}

// stop sends SIGTERM, then SIGKILL if the process is still running after grace, and waits
// until it is reaped. Signals go through the os.Process handle (a pidfd on Linux), so they can
// only ever reach this process, never a later one that reused its PID.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending SIGTERM to %s (pid %d): %w", p.name, p.pid(), err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending SIGKILL to %s (pid %d): %w", p.name, p.pid(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		return fmt.Errorf("%s (pid %d) still not reaped %s after SIGKILL", p.name, p.pid(), grace)
	}
}

// logTail returns up to the last n lines of the process's log.
func (p *process) logTail(n int) string {
	const maxBytes = 16 << 10
	f, err := os.Open(p.logPath)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > maxBytes {
		if _, err := f.Seek(-maxBytes, io.SeekEnd); err != nil {
			return fmt.Sprintf("(log unreadable: %v)", err)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	lines := strings.Split(string(bytes.TrimRight(data, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Linux sends the parent-death signal when the *thread* that forked the child exits, not the
// process. The Go runtime may end threads (a goroutine exiting while locked to its thread takes
// the thread with it), so all children are forked from one goroutine locked to a thread that
// lives as long as the process.
var (
	spawnOnce     sync.Once
	spawnRequests chan spawnRequest
)

type spawnRequest struct {
	cmd    *exec.Cmd
	result chan error
}

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnRequests = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for req := range spawnRequests {
				req.result <- req.cmd.Start()
			}
		}()
	})
	req := spawnRequest{cmd: cmd, result: make(chan error, 1)}
	spawnRequests <- req
	return <-req.result
}
