package pgwire

import (
	"sync"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// slots counts the sessions of a Server against Options.MaxConnections,
// keeping Options.ReservedConnections of them for superusers (as
// PostgreSQL's max_connections and superuser_reserved_connections).
type slots struct {
	mu sync.Mutex
	n  int // sessions holding a slot
}

// acquire takes a slot for a session of a role (super: with SUPERUSER),
// or returns the FATAL 53300 error PostgreSQL sends.
func (s *Server) acquireSlot(super bool) *pgerror.Error {
	max, reserved := s.opts.MaxConnections, s.opts.ReservedConnections
	s.slots.mu.Lock()
	defer s.slots.mu.Unlock()
	if max > 0 {
		if s.slots.n >= max {
			return fatalf(pgcode.TooManyConnections, "sorry, too many clients already")
		}
		if !super && reserved > 0 && s.slots.n >= max-reserved {
			return fatalf(pgcode.TooManyConnections,
				"remaining connection slots are reserved for roles with the %s attribute", "SUPERUSER")
		}
	}
	s.slots.n++
	return nil
}

func (s *Server) releaseSlot() {
	s.slots.mu.Lock()
	s.slots.n--
	s.slots.mu.Unlock()
}
