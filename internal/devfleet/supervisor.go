package devfleet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

const supervisorLog = "supervisor.log"

// UpOptions configure Up.
type UpOptions struct {
	Options
	// Executable is the navarch binary to run as the supervisor; default: this process's.
	Executable string
	// Timeout bounds the whole start.
	Timeout time.Duration
}

// Up starts a fleet in a detached supervisor process (`navarch dev serve`), streams its progress
// to opts.Progress and returns once the fleet is ready. If a fleet already runs in the state
// directory it returns that fleet's state and alreadyRunning=true, and starts nothing.
func Up(ctx context.Context, opts UpOptions) (state *State, alreadyRunning bool, err error) {
	dir, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, false, err
	}
	opts.StateDir = dir
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Minute
	}
	if s, err := ReadState(dir); err == nil {
		if processAlive(s.PID, dir) {
			return s, true, nil
		}
		// A previous supervisor died without cleaning up: stop its leftovers first.
		fmt.Fprintf(opts.Progress, "cleaning up a previous dev fleet whose supervisor (pid %d) is gone\n", s.PID)
		if err := stopRecorded(s, dir, opts.Progress); err != nil {
			return nil, false, err
		}
	} else if !errors.Is(err, ErrNotRunning) {
		return nil, false, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, false, fmt.Errorf("clear state directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}

	exe := opts.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, false, err
		}
	}
	logPath := filepath.Join(dir, supervisorLog)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, false, err
	}
	defer logFile.Close()
	args := []string{"dev", "serve", "--state-dir", dir, "--clusters", strconv.Itoa(opts.Clusters)}
	if opts.Workloads {
		args = append(args, "--workloads")
	}
	if opts.Controller {
		args = append(args, "--controller")
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = dir
	// Its own session: the fleet outlives this command and the terminal it runs in.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("start supervisor: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	follow := newFollower(logPath, opts.Progress)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			follow.copyNew()
			if s, err := ReadState(dir); err == nil && s.Ready {
				return s, false, nil
			}
		case werr := <-exited:
			follow.copyNew()
			if werr == nil {
				werr = errors.New("exit status 0")
			}
			return nil, false, fmt.Errorf("the dev fleet supervisor exited before the fleet was ready (its log is %s): %w", logPath, werr)
		case <-ctx.Done():
			follow.copyNew()
			_ = cmd.Process.Signal(syscall.SIGTERM)
			return nil, false, fmt.Errorf("the dev fleet was not ready in %s; stopping it (log: %s)", opts.Timeout, logPath)
		}
	}
}

// Down stops the fleet recorded in dir and checks that none of its processes is left.
func Down(dir string, progress io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	s, err := ReadState(dir)
	if err != nil {
		return err
	}
	if err := stopRecorded(s, dir, progress); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// stopRecorded asks the supervisor to stop everything, waits for it, then kills by PID any
// recorded process that is still ours and alive.
func stopRecorded(s *State, dir string, progress io.Writer) error {
	if processAlive(s.PID, dir) {
		fmt.Fprintf(progress, "stopping the dev fleet supervisor (pid %d)\n", s.PID)
		_ = syscall.Kill(s.PID, syscall.SIGTERM)
		waitGone([]int{s.PID}, dir, 60*time.Second)
	}
	var left []int
	for _, pid := range s.AllPIDs() {
		if processAlive(pid, dir) {
			left = append(left, pid)
		}
	}
	if len(left) > 0 {
		fmt.Fprintf(progress, "killing %d leftover processes %v\n", len(left), left)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		waitGone(left, dir, 10*time.Second)
	}
	for _, pid := range s.AllPIDs() {
		if processAlive(pid, dir) {
			return fmt.Errorf("process %d of the dev fleet is still running", pid)
		}
	}
	return nil
}

func waitGone(pids []int, dir string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		alive := false
		for _, pid := range pids {
			alive = alive || processAlive(pid, dir)
		}
		if !alive {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Running reports which recorded processes of s are alive.
func Running(s *State, dir string) map[int]bool {
	dir, _ = filepath.Abs(dir)
	alive := map[int]bool{}
	for _, pid := range s.AllPIDs() {
		alive[pid] = processAlive(pid, dir)
	}
	return alive
}

// follower copies the lines appended to a file since the last call.
type follower struct {
	path   string
	offset int64
	out    io.Writer
}

func newFollower(path string, out io.Writer) *follower { return &follower{path: path, out: out} }

func (f *follower) copyNew() {
	file, err := os.Open(f.path)
	if err != nil {
		return
	}
	defer file.Close()
	if _, err := file.Seek(f.offset, io.SeekStart); err != nil {
		return
	}
	r := bufio.NewReader(file)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return // a partial line is printed once complete
		}
		f.offset += int64(len(line))
		fmt.Fprint(f.out, line)
	}
}
