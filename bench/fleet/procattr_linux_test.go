package fleetbench

import "syscall"

// controllerProcAttr puts the controller in a process group of its own, so that stopping it
// stops the git processes it runs too, and has Linux kill it if the benchmark process dies
// without its cleanups (e.g. a go test -timeout panic).
func controllerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
