package embeddedtest

import "os"

// StressEnv, set to 1, runs the stress tier: every test at the size and
// the number of rounds its scenario has in production (20,000 messages,
// every kill round), where the default run keeps the smallest size at
// which the same fact shows (docs/testing.md, "Tiers").
const StressEnv = "JETCTL_STRESS"

// Stress reports whether the stress tier runs (JETCTL_STRESS=1).
func Stress() bool { return os.Getenv(StressEnv) == "1" }

// Size is normal in the default run and stress in the stress tier: a
// test's message count, or its rounds.
func Size(normal, stress int) int {
	if Stress() {
		return stress
	}
	return normal
}
