package service

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/mcpserve"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/telemetry"
)

// mcpEndpoint is ptcd's MCP endpoint: the search and execute tools over
// streamable HTTP on its own listener (mcp.listen), authenticated like
// gRPC calls and run by the same server (tenants, admission, metrics).
type mcpEndpoint struct {
	mcp  *mcpserve.Server
	http *http.Server
	addr string
	// done receives the result of Serve when the listener stops.
	done chan error
	lis  net.Listener
	tls  bool
}

// newMCP builds the endpoint that will serve on lis (bound to
// mcp.listen); nil when the section leaves it off (lis is nil then).
// serve starts it.
func newMCP(c *config.Config, lis net.Listener, srv *server.Server, authn *auth.Authenticator, limiter limiter, tc *tls.Config,
	tracing telemetry.Tracing, log *slog.Logger) *mcpEndpoint {
	if !c.MCP.Enabled() || lis == nil {
		return nil
	}
	desc := int(c.MCP.DescriptionBytes)
	if desc == 0 {
		desc = -1 // 0 in the file: never declare the tools there
	}
	m := mcpserve.New(mcpserve.Config{Backend: srv, Version: version(), DescriptionBytes: desc, Logger: log,
		Limit: limiter.Limit, Tracing: tracing})
	mux := http.NewServeMux()
	mux.Handle(c.MCP.Path, m.Handler(mcpserve.HTTPConfig{
		SessionTimeout:       time.Duration(c.MCP.SessionTimeout),
		MaxSessionsPerCaller: c.MCP.MaxSessionsPerTenant,
		MaxSessions:          c.MCP.MaxSessions,
		BodyReadTimeout:      time.Duration(c.MCP.BodyReadTimeout),
		MaxBodyBytesInFlight: int64(c.MCP.MaxBodyBytesInFlight),
		WriteTimeout:         time.Duration(c.MCP.WriteTimeout),
		Authenticate: func(r *http.Request) (mcpserve.Caller, error) {
			t, err := authn.AuthenticateHTTP(r)
			if err != nil {
				return mcpserve.Caller{}, err
			}
			return mcpserve.Caller{Key: t.Name, Bind: func(ctx context.Context) context.Context { return auth.WithTenant(ctx, t) }}, nil
		},
	}))
	lis = server.LimitListener(lis, c.MCP.MaxConnectionsPerPeer, c.MCP.MaxConnections)
	e := &mcpEndpoint{mcp: m, addr: lis.Addr().String(), done: make(chan error, 1),
		http: &http.Server{Handler: mux, TLSConfig: tc, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
			ReadHeaderTimeout: time.Duration(c.MCP.ReadHeaderTimeout), IdleTimeout: time.Duration(c.MCP.IdleTimeout),
			MaxHeaderBytes: int(c.MCP.MaxHeaderBytes)}}
	e.lis, e.tls = lis, tc != nil
	return e
}

// serve starts serving; the goroutine ends when the HTTP server is shut
// down (stop), sending its error (nil then) to done.
func (e *mcpEndpoint) serve() {
	if e == nil {
		return
	}
	go func() {
		var err error
		if e.tls {
			err = e.http.ServeTLS(e.lis, "", "")
		} else {
			err = e.http.Serve(e.lis)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		e.done <- err
	}()
}

// drain refuses new executions and waits, at most until ctx ends, for the
// running ones.
func (e *mcpEndpoint) drain(ctx context.Context) {
	if e != nil {
		_ = e.mcp.Drain(ctx)
	}
}

// stop ends the sessions (and so their event streams), shuts the listener
// down — responses still being finished get until ctx ends — and closes
// every connection: the last step of a shutdown, once executions have
// ended and their answers are written (drain).
func (e *mcpEndpoint) stop(ctx context.Context) {
	if e != nil {
		e.mcp.CloseSessions()
		_ = e.http.Shutdown(ctx)
		_ = e.http.Close()
	}
}

// refresh updates the tool descriptions after the tools changed.
func (e *mcpEndpoint) refresh() {
	if e != nil {
		e.mcp.Refresh()
	}
}

// failed returns the channel that reports a listener failure (nil, which
// never delivers, when the endpoint is off).
func (e *mcpEndpoint) failed() <-chan error {
	if e == nil {
		return nil
	}
	return e.done
}

// version is the module version ptcd was built at, "(devel)" in a work tree.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
