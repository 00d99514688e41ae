package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// busyCPU is how much CPU time a program must have used before
// interrupt-busy signals it: far more than jetctl needs to start and
// connect, so the signal lands in the busy work.
const busyCPU = time.Second

// interrupt-busy INT|TERM CODE PROGRAM [ARGS...] runs PROGRAM in the
// background until it has used a second of CPU (it is computing, not
// waiting), sends it SIGINT or SIGTERM, and asserts that it exits with
// CODE; its stdout and stderr are kept for the assertions that follow. A
// program that ignores the signal fails the script after a minute instead
// of hanging it.
func cmdInterruptBusy(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: interrupt-busy INT|TERM CODE PROGRAM [ARGS...]")
	}
	sig := map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM}[args[0]]
	if sig == 0 {
		ts.Fatalf("interrupt-busy: unknown signal %q", args[0])
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	bin, err := exec.LookPath(args[2])
	ts.Check(err)
	cmd := exec.Command(bin, args[3:]...)
	cmd.Env = os.Environ()
	for _, name := range []string{"NATS_URL", "NATS_CONTEXT", "HOME", "XDG_CONFIG_HOME", "NO_COLOR", "PATH", "GORACE"} {
		cmd.Env = append(cmd.Env, name+"="+ts.Getenv(name))
	}
	cmd.Dir = ts.Getenv("WORK")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ts.Check(cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ts.Defer(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for busy := false; !busy; {
		select {
		case err := <-done:
			ts.Fatalf("%s exited before it was busy (%v); stderr:\n%s", args[2], err, stderr.String())
		case <-tick.C:
			// An error is a process that just exited: done says how.
			used, err := cpuTime(cmd.Process.Pid)
			busy = err == nil && used >= busyCPU
		}
	}
	ts.Check(cmd.Process.Signal(sig))
	var waitErr error
	select {
	case waitErr = <-done:
	case <-time.After(time.Minute):
		ts.Fatalf("%s still running a minute after SIG%s", args[2], args[0])
	}
	got := 0
	if waitErr != nil {
		var exitErr *exec.ExitError
		if !errors.As(waitErr, &exitErr) {
			ts.Fatalf("%s: %v", args[2], waitErr)
		}
		got = exitErr.ExitCode()
	}
	fmt.Fprint(ts.Stdout(), stdout.String())
	fmt.Fprint(ts.Stderr(), stderr.String())
	if got != want {
		ts.Fatalf("%s exited %d after SIG%s, want %d; stderr:\n%s", args[2], got, args[0], want, stderr.String())
	}
}

// cpuTime is the user and system CPU time process pid has used, from
// /proc/PID/stat (in clock ticks of 1/100 s).
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses: state is
	// field 3, utime 14 and stime 15.
	i := bytes.LastIndexByte(data, ')')
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, data)
	}
	utime, err := strconv.ParseInt(fields[11], 10, 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseInt(fields[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
