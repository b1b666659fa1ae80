package e2e

import "syscall"

// controllerProcAttr puts the controller in a process group of its own, so that killing it
// kills the git processes it runs too, as killing a container does, and has Linux kill it
// if the test process dies without its cleanups (e.g. a go test -timeout panic).
func controllerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
