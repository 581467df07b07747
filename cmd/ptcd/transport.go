package main

import (
	"net"
	"time"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/server"
)

// grpcTransport returns the server options that bound what a caller can
// make ptcd hold before its calls run (the grpc section; docs/security.md):
// credentials checked when a stream starts, before its body is read; the
// streams of a connection, the headers of a call, the calls still
// receiving their first message and their wait; the handshake of a
// connection.
func grpcTransport(c *config.Config, authn *auth.Authenticator) []grpc.ServerOption {
	g := c.GRPC
	return server.TransportOptions(server.TransportConfig{
		Admit:                authn.Admit,
		MaxConcurrentStreams: uint32(g.MaxConcurrentStreams),
		MaxHeaderListBytes:   uint32(g.MaxHeaderListBytes),
		MaxPendingStreams:    g.MaxPendingStreams,
		FirstMessageTimeout:  time.Duration(g.FirstMessageTimeout),
		ConnectionTimeout:    time.Duration(g.ConnectionTimeout),
	})
}

// grpcListener bounds the gRPC listener's connections, of all peers and
// of one IP address.
func grpcListener(l net.Listener, c *config.Config) net.Listener {
	return server.LimitListener(l, c.GRPC.MaxConnectionsPerPeer, c.GRPC.MaxConnections)
}
