package service

import (
	"context"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/logsample"
	"github.com/ptcrun/ptc/internal/server"
)

// grpcTransport returns the server options that bound what a caller can
// make ptcd hold before its calls run (the grpc section; docs/security.md):
// credentials checked when a stream starts, before its body is read; the
// streams of a connection, the headers of a call, the calls still
// receiving their first message and their wait; the handshake of a
// connection.
func grpcTransport(c *config.Config, authn *auth.Authenticator, log *slog.Logger) []grpc.ServerOption {
	g := c.GRPC
	return server.TransportOptions(server.TransportConfig{
		Refused:                    refusedLogger(log),
		Admit:                      authn.Admit,
		MaxConcurrentStreams:       uint32(g.MaxConcurrentStreams),
		MaxHeaderListBytes:         uint32(g.MaxHeaderListBytes),
		MaxPendingStreams:          g.MaxPendingStreams,
		MaxPendingStreamsPerCaller: g.MaxPendingStreamsPerTenant,
		FirstMessageTimeout:        time.Duration(g.FirstMessageTimeout),
		ConnectionTimeout:          time.Duration(g.ConnectionTimeout),
	})
}

// The rate of the records of refused calls (refusedLogger) and of
// refused MCP requests.
const (
	refusedPerSecond = 10
	refusedBurst     = 50
)

// grpcListener bounds the gRPC listener's connections, of all peers and
// of one IP address.
func grpcListener(l net.Listener, c *config.Config) net.Listener {
	return server.LimitListener(l, c.GRPC.MaxConnectionsPerPeer, c.GRPC.MaxConnections)
}

// refusedLogger logs a call refused at stream start, as the interceptor
// chain logs the calls it finishes: at info for a caller's error
// (UNAUTHENTICATED), at warn for an overloaded server
// (RESOURCE_EXHAUSTED). A caller decides how many calls are refused, so
// at most refusedPerSecond records a second are written (bursts of
// refusedBurst); the next one written says how many were left out.
func refusedLogger(log *slog.Logger) func(ctx context.Context, method string, err error) {
	sample := logsample.New(refusedPerSecond, refusedBurst)
	return func(ctx context.Context, method string, err error) {
		write, suppressed := sample.Allow()
		if !write {
			return
		}
		st := status.Convert(err)
		lvl := slog.LevelInfo
		if st.Code() != codes.Unauthenticated {
			lvl = slog.LevelWarn
		}
		addr := ""
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			addr = p.Addr.String()
		}
		log.Log(ctx, lvl, "call refused at stream start", "grpc.method", method, "grpc.code", st.Code().String(),
			"peer.address", addr, "err", st.Message(), "suppressed", suppressed)
	}
}
