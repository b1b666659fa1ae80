package localcluster

import "syscall"

// sysProcAttr puts a child in its own process group, so a Ctrl-C in the terminal reaches only
// the Go process (which then stops the cluster in order), and has the kernel SIGKILL it when
// the thread that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
