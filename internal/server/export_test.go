package server

import "time"

// WithHalfCloseGrace sets how long a Session's half-close waits for the
// end of the RPC before it fails the client calls pending.
func WithHalfCloseGrace(d time.Duration) Option {
	return func(s *Server) { s.halfCloseGrace = d }
}
