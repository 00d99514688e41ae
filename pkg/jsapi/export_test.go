package jsapi

import "time"

// SetPullHeartbeat shortens the idle heartbeat for a test and returns a
// function that puts it back.
func SetPullHeartbeat(d time.Duration) (restore func()) {
	old := pullHeartbeat
	pullHeartbeat = d
	return func() { pullHeartbeat = old }
}
