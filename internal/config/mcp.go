package config

import (
	"net"
	"path"
	"strings"
	"time"
)

// Defaults of the mcp section.
const (
	DefaultMCPPath             = "/mcp"
	DefaultMCPSessionTimeout   = 30 * time.Minute
	DefaultMCPDescriptionBytes = 16 << 10
	// DefaultMCPMaxSessionsPerTenant and DefaultMCPMaxSessions bound the
	// open MCP sessions of one tenant and of all tenants.
	DefaultMCPMaxSessionsPerTenant = 100
	DefaultMCPMaxSessions          = 1000
	// DefaultMCPIdleTimeout closes a keep-alive connection without a
	// request this long.
	DefaultMCPIdleTimeout = time.Minute
	// DefaultMCPReadHeaderTimeout bounds the reading of a request's
	// headers.
	DefaultMCPReadHeaderTimeout = 10 * time.Second
	// DefaultMCPMaxHeaderBytes bounds a request's headers.
	DefaultMCPMaxHeaderBytes = 64 << 10
	// DefaultMCPBodyReadTimeout bounds the reading of a request's body.
	DefaultMCPBodyReadTimeout = 30 * time.Second
	// DefaultMCPMaxBodyBytesInFlight bounds the request-body bytes held
	// by all MCP requests at once: four bodies of the largest size
	// (16 MiB).
	DefaultMCPMaxBodyBytesInFlight = 64 << 20
	// DefaultMCPWriteTimeout bounds one write of a response.
	DefaultMCPWriteTimeout = 30 * time.Second
)

// MCP is the mcp section: ptcd's Model Context Protocol endpoint
// (streamable HTTP), which serves the search and execute tools to MCP
// clients with the same tenants, tools and limits as gRPC.
type MCP struct {
	// Listen is the HTTP address of the endpoint, host:port; "" (the
	// default) turns it off. It uses the tls section like the gRPC
	// listener, and counts for auth: off loopback, auth is required.
	Listen string `yaml:"listen"`
	// Path is the endpoint's path on that listener.
	Path string `yaml:"path"`
	// SessionTimeout closes MCP sessions idle this long.
	SessionTimeout Duration `yaml:"session_timeout"`
	// DescriptionBytes bounds the tool declarations in the execute tool's
	// description; past it the description names the tools and points to
	// the search tool. 0 never declares them.
	DescriptionBytes ByteSize `yaml:"description_bytes"`
	// MaxSessionsPerTenant bounds the open MCP sessions of one tenant; a
	// new one beyond is refused (HTTP 429).
	MaxSessionsPerTenant int `yaml:"max_sessions_per_tenant"`
	// MaxSessions bounds the open MCP sessions of all tenants; a new one
	// beyond is refused (HTTP 503).
	MaxSessions int `yaml:"max_sessions"`
	// IdleTimeout closes a keep-alive connection that sends no request
	// this long.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// ReadHeaderTimeout bounds the reading of a request's headers.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// MaxHeaderBytes bounds a request's headers (HTTP 431 beyond).
	MaxHeaderBytes ByteSize `yaml:"max_header_bytes"`
	// BodyReadTimeout bounds the reading of a request's body, from its
	// headers to its last byte (HTTP 408 and the connection closed
	// beyond).
	BodyReadTimeout Duration `yaml:"body_read_timeout"`
	// MaxBodyBytesInFlight bounds the request-body bytes all MCP requests
	// hold at once, from their first byte until the request ends; a
	// request past it is refused (HTTP 503 with Retry-After).
	MaxBodyBytesInFlight ByteSize `yaml:"max_body_bytes_in_flight"`
	// WriteTimeout bounds each write of a response to a client that does
	// not read it.
	WriteTimeout Duration `yaml:"write_timeout"`
	// MaxConnections bounds the open connections of all peers.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerPeer bounds the open connections of one IP address.
	MaxConnectionsPerPeer int `yaml:"max_connections_per_peer"`
}

// Enabled reports whether ptcd serves MCP.
func (m MCP) Enabled() bool { return m.Listen != "" }

func defaultMCP() MCP {
	return MCP{Path: DefaultMCPPath, SessionTimeout: Duration(DefaultMCPSessionTimeout), DescriptionBytes: DefaultMCPDescriptionBytes,
		MaxSessionsPerTenant: DefaultMCPMaxSessionsPerTenant, MaxSessions: DefaultMCPMaxSessions,
		IdleTimeout: Duration(DefaultMCPIdleTimeout), ReadHeaderTimeout: Duration(DefaultMCPReadHeaderTimeout),
		MaxHeaderBytes: DefaultMCPMaxHeaderBytes, BodyReadTimeout: Duration(DefaultMCPBodyReadTimeout),
		MaxBodyBytesInFlight: DefaultMCPMaxBodyBytesInFlight, WriteTimeout: Duration(DefaultMCPWriteTimeout), MaxConnections: DefaultMaxConnections, MaxConnectionsPerPeer: DefaultMaxConnectionsPerPeer}
}

func (m MCP) validate() *Error {
	if m.Listen != "" {
		if _, _, err := net.SplitHostPort(m.Listen); err != nil {
			return keyError("mcp.listen", "%q is not host:port: write e.g. \"127.0.0.1:7879\", or \"\" to turn MCP off", m.Listen)
		}
	}
	switch {
	case !strings.HasPrefix(m.Path, "/") || path.Clean(m.Path) != m.Path || strings.ContainsAny(m.Path, "?#% \t"):
		return keyError("mcp.path", "%q is not a clean absolute path: write e.g. \"/mcp\"", m.Path)
	case m.SessionTimeout <= 0:
		return keyError("mcp.session_timeout", "%s is not positive: use a duration such as \"30m\"", m.SessionTimeout)
	case m.MaxSessionsPerTenant <= 0:
		return keyError("mcp.max_sessions_per_tenant", "%d is not positive: use a count such as 100", m.MaxSessionsPerTenant)
	case m.MaxSessions <= 0:
		return keyError("mcp.max_sessions", "%d is not positive: use a count such as 1000", m.MaxSessions)
	case m.IdleTimeout <= 0:
		return keyError("mcp.idle_timeout", "%s is not positive: use a duration such as \"1m\"", m.IdleTimeout)
	case m.ReadHeaderTimeout <= 0:
		return keyError("mcp.read_header_timeout", "%s is not positive: use a duration such as \"10s\"", m.ReadHeaderTimeout)
	case m.MaxHeaderBytes <= 0 || m.MaxHeaderBytes > 1<<30:
		return keyError("mcp.max_header_bytes", "%s is out of range: use a size above 0 and at most 1GiB, such as \"64KiB\"", m.MaxHeaderBytes)
	case m.BodyReadTimeout <= 0:
		return keyError("mcp.body_read_timeout", "%s is not positive: use a duration such as \"30s\"", m.BodyReadTimeout)
	case m.MaxBodyBytesInFlight < 16<<20 || m.MaxBodyBytesInFlight > 1<<40:
		return keyError("mcp.max_body_bytes_in_flight", "%s is out of range: use a size of at least 16MiB (the largest request) and at most 1TiB, such as \"64MiB\"", m.MaxBodyBytesInFlight)
	case m.WriteTimeout <= 0:
		return keyError("mcp.write_timeout", "%s is not positive: use a duration such as \"30s\"", m.WriteTimeout)
	case m.MaxConnections <= 0:
		return keyError("mcp.max_connections", "%d is not positive: use a count such as %d", m.MaxConnections, DefaultMaxConnections)
	case m.MaxConnectionsPerPeer <= 0:
		return keyError("mcp.max_connections_per_peer", "%d is not positive: use a count such as %d", m.MaxConnectionsPerPeer, DefaultMaxConnectionsPerPeer)
	case m.DescriptionBytes < 0:
		return keyError("mcp.description_bytes", "%s is negative: use a size such as \"16KiB\", or 0 to never declare the tools there", m.DescriptionBytes)
	}
	return nil
}
