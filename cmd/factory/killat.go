package factory

import (
	"context"
	"fmt"
	"os"
	"time"
)

// The test hooks of the steps of a command that moves data (a migration,
// a rewind's recreate). At the step named by
// JETCTL_TEST_KILL_AT jetctl kills itself with SIGKILL: the kill-and-rerun
// tests die at an exact point, as a kill -9 from outside would (nothing
// deferred runs, no lease is released). At the step named by
// JETCTL_TEST_STOP_AT it says so on stderr and waits for the command to be
// interrupted (SIGINT, SIGTERM), so that a test interrupts it there. At
// the step named by JETCTL_TEST_PAUSE_AT it says so on stderr and waits
// until the file JETCTL_TEST_RESUME_FILE exists, then goes on, so that a
// test acts on the server in the middle of a command.
const (
	killAtEnv     = "JETCTL_TEST_KILL_AT"
	stopAtEnv     = "JETCTL_TEST_STOP_AT"
	pauseAtEnv    = "JETCTL_TEST_PAUSE_AT"
	resumeFileEnv = "JETCTL_TEST_RESUME_FILE"
)

// KillAt returns the step callback for pkg/migrate and pkg/consumer's
// rewind (nil unless a variable is set); apply --migrate uses it too. ctx
// is the command's: it ends when the command is interrupted.
func KillAt(ctx context.Context, f *Factory) func(string) {
	kill, stop, pause := f.Getenv(killAtEnv), f.Getenv(stopAtEnv), f.Getenv(pauseAtEnv)
	if kill == "" && stop == "" && pause == "" {
		return nil
	}
	return func(step string) {
		switch step {
		case kill:
			killSelf()
		case stop:
			fmt.Fprintf(f.IO.ErrOut, "jetctl: test: stopped at %s\n", step)
			<-ctx.Done()
		case pause:
			fmt.Fprintf(f.IO.ErrOut, "jetctl: test: paused at %s\n", step)
			for ctx.Err() == nil {
				if _, err := os.Stat(f.Getenv(resumeFileEnv)); err == nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}
