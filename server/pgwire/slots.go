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
	mu    sync.Mutex
	n     int // sessions holding a slot
	conns int // connections being served, sessions or not yet
}

// enterConn counts a new connection; it refuses it (false) when
// connections, authenticated or not, reach twice MaxConnections (as
// PostgreSQL's postmaster, which refuses to start more than twice
// max_connections backends): clients that never finish their startup
// cannot pile up beyond that.
func (s *Server) enterConn() bool {
	s.slots.mu.Lock()
	defer s.slots.mu.Unlock()
	if max := s.opts.MaxConnections; max > 0 && s.slots.conns >= 2*max {
		return false
	}
	s.slots.conns++
	return true
}

func (s *Server) leaveConn() {
	s.slots.mu.Lock()
	s.slots.conns--
	s.slots.mu.Unlock()
}

// acquireSlot takes a slot for a session of a role (super: with SUPERUSER),
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
