//go:build !linux

package e2e

import "syscall"

// controllerProcAttr puts the controller in a process group of its own, so that killing it
// kills the git processes it runs too, as killing a container does.
func controllerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
