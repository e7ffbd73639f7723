package kubetest

import "syscall"

// sysProcAttr makes the kernel kill the servers when the test process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
