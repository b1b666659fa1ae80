//go:build !linux

package fleetbench

import "syscall"

// controllerProcAttr puts the controller in a process group of its own, so that stopping it
// stops the git processes it runs too.
func controllerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
