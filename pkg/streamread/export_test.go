package streamread

import "time"

// SetPullHeartbeat shortens the idle heartbeat for a test and returns a
// function that puts it back.
func SetPullHeartbeat(d time.Duration) (restore func()) {
	old := pullHeartbeat
	pullHeartbeat = d
	return func() { pullHeartbeat = old }
}

// SetPullBuffer sets the bytes a pull request asks for, for a test, and
// returns a function that puts it back.
func SetPullBuffer(n uint64) (restore func()) {
	old := pullBuffer
	pullBuffer = n
	return func() { pullBuffer = old }
}

// SetConsumerCleanupTimeout sets how long removing a read's consumer may
// take, for a test, and returns a function that puts it back.
func SetConsumerCleanupTimeout(d time.Duration) (restore func()) {
	old := consumerCleanupTimeout
	consumerCleanupTimeout = d
	return func() { consumerCleanupTimeout = old }
}
