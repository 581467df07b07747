package mcpserve

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// sessionGate admits the requests that open a session (a POST without a
// session id) while the caller and the server are under their session
// caps. Open sessions are counted from the MCP servers themselves; the
// requests still opening one are counted here, so that concurrent
// initializes cannot pass the caps together.
type sessionGate struct {
	perCaller, total int
	timeout          time.Duration

	mu      sync.Mutex
	opening map[string]int // by caller key
	all     int            // sum of opening
}

// admit reserves a session for c, or writes the refusal (429 over the
// caller's cap, 503 over the server's) and returns false. A reservation
// is given back with done once the request ends: by then the session it
// opened, if any, counts among the server's sessions.
func (s *Server) admit(g *sessionGate, w http.ResponseWriter, c Caller) (done func(), ok bool) {
	cs := s.serverFor(c)
	s.mu.Lock()
	all := make([]*callerServer, 0, len(s.byCaller))
	for _, x := range s.byCaller {
		all = append(all, x)
	}
	s.mu.Unlock()

	g.mu.Lock()
	defer g.mu.Unlock()
	mine := g.opening[c.Key] + count(cs)
	total := g.all
	for _, x := range all {
		total += count(x)
	}
	switch {
	case mine >= g.perCaller:
		http.Error(w, fmt.Sprintf("too many open MCP sessions for this tenant: the limit is %d (mcp.max_sessions_per_tenant); "+
			"end sessions no longer used (HTTP DELETE with their Mcp-Session-Id), or wait until idle ones close (after %s)", g.perCaller, g.timeout),
			http.StatusTooManyRequests)
		return nil, false
	case total >= g.total:
		w.Header().Set("Retry-After", "60")
		http.Error(w, fmt.Sprintf("too many open MCP sessions on this server: the limit is %d in all (mcp.max_sessions); retry later", g.total),
			http.StatusServiceUnavailable)
		return nil, false
	}
	g.opening[c.Key]++
	g.all++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.all--
		if g.opening[c.Key]--; g.opening[c.Key] == 0 {
			delete(g.opening, c.Key)
		}
	}, true
}

// count returns the open sessions of one caller's MCP server.
func count(cs *callerServer) int {
	n := 0
	for range cs.mcp.Sessions() {
		n++
	}
	return n
}
