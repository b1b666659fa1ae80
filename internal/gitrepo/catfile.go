package gitrepo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// catFileIdle is how long an unused cat-file process is kept for the next
// read before it is stopped.
const catFileIdle = 30 * time.Second

// errObjectMissing is returned for an object the mirror does not have.
var errObjectMissing = errors.New("object missing from mirror")

// catFile reads objects from a mirror through one long-lived
// `git cat-file --batch` process, started on first use and stopped when
// idle, so reading many files costs one process rather than one each.
// Reads are serialised.
type catFile struct {
	gitBinary string
	gitDir    string
	env       []string
	home      string

	mu     sync.Mutex
	proc   *catFileProc
	idle   *time.Timer
	closed bool
}

type catFileProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// read returns the content of the object oid, which must be a blob.
func (c *catFile) read(oid string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	var err error
	// A second attempt on a fresh process covers one that died.
	for range 2 {
		if c.proc == nil {
			if c.proc, err = c.start(); err != nil {
				return nil, err
			}
		}
		var data []byte
		data, err = c.proc.read(oid)
		if err == nil || errors.Is(err, errObjectMissing) {
			c.touch()
			return data, err
		}
		c.stopLocked()
	}
	return nil, err
}

func (c *catFile) start() (*catFileProc, error) {
	cmd := exec.Command(c.gitBinary, "--git-dir="+c.gitDir, "cat-file", "--batch")
	cmd.Dir = c.home
	cmd.Env = c.env
	cmd.WaitDelay = terminateDelay
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start git cat-file: %w", err)
	}
	return &catFileProc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}, nil
}

// touch (re)arms the idle timer. The caller holds c.mu.
func (c *catFile) touch() {
	if c.idle == nil {
		c.idle = time.AfterFunc(catFileIdle, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.stopLocked()
		})
		return
	}
	c.idle.Reset(catFileIdle)
}

// stopLocked ends the process, if any. The caller holds c.mu.
func (c *catFile) stopLocked() {
	if c.proc == nil {
		return
	}
	// cat-file exits at the end of its input. An error here means the
	// process was already broken; the next read starts a new one.
	_ = c.proc.in.Close()
	_ = c.proc.cmd.Wait()
	c.proc = nil
}

// close stops the process for good.
func (c *catFile) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.idle != nil {
		c.idle.Stop()
	}
	c.stopLocked()
}

// read asks for one object: "<oid>\n" in; "<oid> <type> <size>\n<content>\n"
// or "<oid> missing\n" out.
func (p *catFileProc) read(oid string) ([]byte, error) {
	if _, err := io.WriteString(p.in, oid+"\n"); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	header, err := p.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("git cat-file: read header: %w", err)
	}
	fields := strings.Fields(header)
	if len(fields) == 2 && fields[1] == "missing" {
		return nil, fmt.Errorf("%w: %s", errObjectMissing, oid)
	}
	if len(fields) != 3 {
		return nil, fmt.Errorf("git cat-file: unexpected header %q", header)
	}
	size, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil || size < 0 {
		return nil, fmt.Errorf("git cat-file: unexpected header %q", header)
	}
	data := make([]byte, size+1) // content and the terminating LF
	if _, err := io.ReadFull(p.out, data); err != nil {
		return nil, fmt.Errorf("git cat-file: read %s: %w", oid, err)
	}
	if fields[1] != "blob" {
		return nil, fmt.Errorf("git cat-file: %s is a %s, not a blob", oid, fields[1])
	}
	return data[:size], nil
}
