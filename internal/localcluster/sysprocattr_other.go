//go:build unix && !linux

package localcluster

import "syscall"

// sysProcAttr puts a child in its own process group, so a Ctrl-C in the terminal reaches only
// the Go process, which then stops the cluster in order. There is no parent-death signal
// outside Linux: a killed Go process leaves its children running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
