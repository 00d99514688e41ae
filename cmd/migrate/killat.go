package migrate

import (
	"github.com/jetctl/jetctl/cmd/factory"
)

// killAtEnv names a migration step at which jetctl kills itself with
// SIGKILL: the kill-and-rerun tests use it to die at an exact point, as a
// kill -9 from outside would (nothing deferred runs, no lease is released).
const killAtEnv = "JETCTL_TEST_KILL_AT"

// KillAt returns the step callback for pkg/migrate (nil unless the
// variable is set); apply --migrate uses it too.
func KillAt(f *factory.Factory) func(string) {
	at := f.Getenv(killAtEnv)
	if at == "" {
		return nil
	}
	return func(step string) {
		if step == at {
			killSelf()
		}
	}
}
