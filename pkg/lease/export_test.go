package lease

import "time"

// SetClock replaces the local clock until the returned function restores
// it. Set it while no lease of the test is held.
func SetClock(now func() time.Time) (restore func()) {
	old := clock
	clock = now
	return func() { clock = old }
}
