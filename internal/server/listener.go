package server

import (
	"net"
	"sync"
)

// LimitListener returns a listener that holds at most perPeer open
// connections from one IP address and at most total from all; a
// connection beyond either bound is closed as soon as it is accepted,
// before a byte of it is read, so a client cannot make the server hold
// more connections (and their buffers and goroutines) than the bounds
// allow, and one peer cannot take every connection. A bound <= 0 is no
// bound. The gRPC and the MCP listeners of ptcd use it.
func LimitListener(l net.Listener, perPeer, total int) net.Listener {
	if perPeer <= 0 && total <= 0 {
		return l
	}
	return &limitListener{Listener: l, perPeer: perPeer, total: total, peers: map[string]int{}}
}

// limitListener counts the open connections it accepted, by peer.
type limitListener struct {
	net.Listener
	perPeer, total int

	mu    sync.Mutex
	open  int
	peers map[string]int
}

// Accept returns the next connection within the bounds, closing those
// beyond them.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer := peerIP(c.RemoteAddr())
		if l.take(peer) {
			return &limitedConn{Conn: c, l: l, peer: peer}, nil
		}
		_ = c.Close()
	}
}

// take counts a connection of peer if the bounds allow it.
func (l *limitListener) take(peer string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total > 0 && l.open >= l.total || l.perPeer > 0 && l.peers[peer] >= l.perPeer {
		return false
	}
	l.open++
	l.peers[peer]++
	return true
}

// release forgets a closed connection of peer.
func (l *limitListener) release(peer string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.peers[peer]--; l.peers[peer] <= 0 {
		delete(l.peers, peer)
	}
}

// peerIP is the IP address of a remote address (the whole address when
// it has no port).
func peerIP(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// limitedConn gives its place back when closed (once).
type limitedConn struct {
	net.Conn
	l    *limitListener
	peer string
	once sync.Once
}

// Close releases the connection's place and closes it: released first,
// so that a peer that sees the connection end finds its place free.
func (c *limitedConn) Close() error {
	c.once.Do(func() { c.l.release(c.peer) })
	return c.Conn.Close()
}
