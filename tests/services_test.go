package tests

import "testing"

// TestServices makes sure the machine's PostgreSQL and Redis, which
// reference runs and connector tests use, are up (starting them if not).
func TestServices(t *testing.T) {
	EnsurePostgres(t)
	EnsureRedis(t)
}
