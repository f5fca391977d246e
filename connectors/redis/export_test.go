package redis

import "time"

// SetIOTimeout changes the I/O timeout of sinks opened afterwards and
// returns a function that restores it.
func SetIOTimeout(d time.Duration) (restore func()) {
	old := ioTimeout
	ioTimeout = d
	return func() { ioTimeout = old }
}

// SetMaxChunkChanges changes the most changes in one transaction and
// returns a function that restores it.
func SetMaxChunkChanges(n int) (restore func()) {
	old := maxChunkChanges
	maxChunkChanges = n
	return func() { maxChunkChanges = old }
}
