package service

import (
	"net"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

const (
	// maxHealthWatches bounds the health Watch streams open at once.
	maxHealthWatches = 1024
	// maxHealthWatchesPerPeer bounds those of one client address.
	maxHealthWatchesPerPeer = 16
)

// boundedHealth is the gRPC health service with a bound on its Watch
// streams. Health needs no credentials (load balancers and probes call
// it), and a Watch stream holds a goroutine and its buffers for as long as
// its caller keeps it open: unbounded, anyone who can connect could make
// the server hold millions. Check is not bounded beyond the transport's
// limits: it returns at once.
type boundedHealth struct {
	*health.Server

	mu     sync.Mutex
	open   int
	byPeer map[string]int
}

func newBoundedHealth(s *health.Server) *boundedHealth {
	return &boundedHealth{Server: s, byPeer: map[string]int{}}
}

// Watch implements healthpb.HealthServer: the health service's Watch,
// refused with RESOURCE_EXHAUSTED past the bounds.
func (h *boundedHealth) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	addr := ""
	if p, ok := peer.FromContext(stream.Context()); ok && p.Addr != nil {
		addr = p.Addr.String()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			addr = host
		}
	}
	h.mu.Lock()
	if h.open >= maxHealthWatches || h.byPeer[addr] >= maxHealthWatchesPerPeer {
		h.mu.Unlock()
		return status.Errorf(codes.ResourceExhausted, "too many health Watch streams open (at most %d in all, %d per client address): close one, or use Check",
			maxHealthWatches, maxHealthWatchesPerPeer)
	}
	h.open++
	h.byPeer[addr]++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.open--
		if h.byPeer[addr]--; h.byPeer[addr] == 0 {
			delete(h.byPeer, addr)
		}
		h.mu.Unlock()
	}()
	return h.Server.Watch(req, stream)
}
