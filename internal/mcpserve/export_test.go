package mcpserve

// WaitBodyBytes waits until the request bodies s's HTTP handler holds
// satisfy ok (their bytes in all).
func WaitBodyBytes(s *Server, ok func(held int64) bool) { s.bodies.waitFor(ok) }
