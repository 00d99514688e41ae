package plugin

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jetctl/jetctl/cmd/exitcode"
)

// Run starts the plugin at path with args and the resolved connection in
// connEnv, waits for it and returns its exit code as a PluginExit error.
// SIGINT and SIGTERM sent to jetctl are passed on to the plugin, and jetctl
// waits for it to finish rather than dying first.
func Run(path string, args []string, connEnv []string, streams [3]*os.File) error {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = streams[0], streams[1], streams[2]
	cmd.Env = mergeEnv(os.Environ(), append(connEnv, "JETCTL_BIN="+self))
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return exitcode.Newf(exitcode.Failure, "plugin %s: %v", path, err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return &exitcode.PluginExit{Code: exitCode(exitErr)}
	}
	if err != nil {
		return exitcode.Newf(exitcode.Failure, "plugin %s: %v", path, err)
	}
	return nil
}

// exitCode is the plugin's exit status as a shell reports it: its own code,
// or 128 plus the number of the signal that killed it (139 for SIGSEGV).
func exitCode(exitErr *exec.ExitError) int {
	if code := exitErr.ExitCode(); code >= 0 {
		return code
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return exitcode.Failure
}

// mergeEnv returns base with the variables in over replacing any of the same
// name.
func mergeEnv(base, over []string) []string {
	names := make(map[string]bool, len(over))
	for _, kv := range over {
		names[strings.SplitN(kv, "=", 2)[0]] = true
	}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range base {
		if !names[strings.SplitN(kv, "=", 2)[0]] {
			out = append(out, kv)
		}
	}
	return append(out, over...)
}
