//go:build !linux

package embeddedtest

import "syscall"

// childAttrs are the defaults where a child cannot be tied to its parent's
// death: a killed test process leaves its server binary running.
func childAttrs() *syscall.SysProcAttr { return nil }
