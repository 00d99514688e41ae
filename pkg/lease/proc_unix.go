//go:build unix

package lease

import (
	"errors"
	"os"
	"syscall"
)

// processExists reports whether a process with pid exists here; a process
// of another user (EPERM) exists too.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// pidNamespace identifies the PID namespace (Linux: "pid:[4026531836]"),
// so that two containers with one hostname do not judge each other's pids;
// "" where there is none to read.
func pidNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}
