package embeddedtest

import "syscall"

// childAttrs make a server binary the tests started die with them, even
// when the test process is killed before its cleanups run.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
