package config

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/limits"
)

// Defaults of the serving sections.
const (
	DefaultMetricsListen = "127.0.0.1:9090"
	// DefaultMaxRecvBytes fits the largest request the runner accepts: a
	// WASM module (16 × the 1 MiB source bound), the 8 MiB input, and
	// 1 MiB for the rest of the message (internal/service tests that it
	// follows the executor's bounds).
	DefaultMaxRecvBytes = 16*(1<<20) + 8<<20 + 1<<20
	// DefaultMaxSendBytes fits the largest result ceiling (16 MiB), the
	// largest log ceiling (4 MiB) and a trace.
	DefaultMaxSendBytes = 64 << 20
	// DefaultMaxConcurrentStreams bounds the streams of one gRPC
	// connection. Above the default admission (64 running and 256
	// queued), so that one client channel reaches ptcd's admission queue
	// and is told RESOURCE_EXHAUSTED when it is full, instead of waiting
	// unseen on its own side of the connection.
	DefaultMaxConcurrentStreams = 1000
	// DefaultMaxHeaderListBytes bounds a gRPC call's headers: a 4 KiB
	// token, trace context and metadata fit well within it.
	DefaultMaxHeaderListBytes = 16 << 10
	// DefaultMaxPendingStreams bounds the gRPC streams of all connections
	// still receiving their first message.
	DefaultMaxPendingStreams = 1024
	// DefaultMaxPendingStreamsPerTenant bounds those of one tenant, so
	// that one cannot take every place. A connection's streams all count
	// from their headers until their first message is read, so a burst
	// on one connection counts whole: half of the places, well above the
	// admission's 64 running and 256 queued.
	DefaultMaxPendingStreamsPerTenant = DefaultMaxPendingStreams / 2
	// DefaultFirstMessageTimeout bounds a gRPC stream's wait for its first
	// message: a 25 MiB request at about 1.3 MB/s.
	DefaultFirstMessageTimeout = 20 * time.Second
	// DefaultConnectionTimeout bounds a connection's TLS handshake and
	// HTTP/2 preface.
	DefaultConnectionTimeout = 10 * time.Second
	// DefaultMaxConnectionIdle closes a gRPC connection without calls this
	// long (clients reconnect when they need to).
	DefaultMaxConnectionIdle = 5 * time.Minute
	// DefaultMaxConnections and DefaultMaxConnectionsPerPeer bound the
	// open connections of a listener, of all peers and of one IP address.
	DefaultMaxConnections        = 1024
	DefaultMaxConnectionsPerPeer = 64
)

// Logging is the logging section.
type Logging struct {
	// Level is debug, info, warn or error. At debug, request and response
	// messages (scripts, inputs, tool payloads) are logged too.
	Level string `yaml:"level"`
	// Format is auto (text when standard error is a terminal, JSON
	// otherwise), json or text.
	Format string `yaml:"format"`
}

// Auth is the auth section.
type Auth struct {
	// Enabled requires every call to carry a tenant's credentials. Unset,
	// it is true unless ptcd listens on a loopback address.
	Enabled *bool `yaml:"enabled,omitempty"`
	// InsecureNoAuth turns authentication off even on a non-loopback
	// address (for a trusted network only).
	InsecureNoAuth bool `yaml:"insecure_no_auth"`
}

// Tenant is one entry of tenants.
type Tenant struct {
	Name string `yaml:"name"`
	// TokenHashes are "sha256:<hex>" hashes of the tenant's bearer tokens
	// (`ptcd hash-token` prints one); never the tokens.
	TokenHashes []string `yaml:"token_hashes,omitempty"`
	// ClientIdentities are client-certificate identities: a subject CN or
	// a URI SAN. They need tls.client_ca_file.
	ClientIdentities []string `yaml:"client_identities,omitempty"`
	// Tools are the server tools the tenant may use (names or globs);
	// empty means all.
	Tools []string `yaml:"tools,omitempty"`
	// Ceilings cap the tenant's limits below limits.ceilings; 0 adds no cap.
	Ceilings LimitValues `yaml:"ceilings,omitempty"`
	// MaxConcurrent bounds the tenant's executions at once; 0 = no quota.
	MaxConcurrent int `yaml:"max_concurrent,omitempty"`
	// Rate is requests per second; 0 = unlimited. Burst defaults to Rate.
	Rate  float64 `yaml:"rate,omitempty"`
	Burst int     `yaml:"burst,omitempty"`
}

// Admission is the admission section.
type Admission struct {
	// MaxConcurrent is the number of executions running at once.
	MaxConcurrent int `yaml:"max_concurrent"`
	// MaxQueue is how many requests may wait; more are refused.
	MaxQueue int `yaml:"max_queue"`
	// MaxWait bounds one request's wait.
	MaxWait Duration `yaml:"max_wait"`
}

// Metrics is the metrics section.
type Metrics struct {
	// Listen is the HTTP address of /metrics, /healthz and /readyz; ""
	// turns the listener off.
	Listen string `yaml:"listen"`
}

// TLS is the tls section; empty means plaintext.
type TLS struct {
	CertFile string `yaml:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file,omitempty"`
	// ClientCAFile verifies client certificates (mTLS).
	ClientCAFile string `yaml:"client_ca_file,omitempty"`
	// RequireClientCert refuses connections without a client certificate;
	// otherwise one is verified when given (tokens still work).
	RequireClientCert bool `yaml:"require_client_cert,omitempty"`
}

// Enabled reports whether TLS is configured.
func (t TLS) Enabled() bool { return t.CertFile != "" }

// GRPC is the grpc section: transport settings.
type GRPC struct {
	// MaxRecvBytes bounds a request message.
	MaxRecvBytes ByteSize `yaml:"max_recv_bytes"`
	// MaxSendBytes bounds a response message.
	MaxSendBytes ByteSize `yaml:"max_send_bytes"`
	// MaxConcurrentStreams bounds the streams open at once on one
	// connection.
	MaxConcurrentStreams int `yaml:"max_concurrent_streams"`
	// MaxHeaderListBytes bounds the headers of one call.
	MaxHeaderListBytes ByteSize `yaml:"max_header_list_bytes"`
	// MaxPendingStreams bounds the calls of all connections that are
	// still receiving their first message.
	MaxPendingStreams int `yaml:"max_pending_streams"`
	// MaxPendingStreamsPerTenant bounds those calls of one tenant.
	MaxPendingStreamsPerTenant int `yaml:"max_pending_streams_per_tenant"`
	// FirstMessageTimeout bounds a call's wait for its first message.
	FirstMessageTimeout Duration `yaml:"first_message_timeout"`
	// ConnectionTimeout bounds a new connection's TLS handshake and HTTP/2
	// preface.
	ConnectionTimeout Duration `yaml:"connection_timeout"`
	// MaxConnections bounds the open connections of all peers.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerPeer bounds the open connections of one IP address.
	MaxConnectionsPerPeer int       `yaml:"max_connections_per_peer"`
	Keepalive             Keepalive `yaml:"keepalive"`
}

// Keepalive holds keepalive enforcement and server parameters.
type Keepalive struct {
	// MinTime is the shortest client ping interval allowed; clients that
	// ping more often are disconnected.
	MinTime Duration `yaml:"min_time"`
	// PermitWithoutStream allows client pings with no active RPC.
	PermitWithoutStream bool `yaml:"permit_without_stream"`
	// Time is how long a quiet connection waits before the server pings.
	Time Duration `yaml:"time"`
	// Timeout is how long the server waits for a ping's answer.
	Timeout Duration `yaml:"timeout"`
	// MaxConnectionIdle closes connections idle this long; 0 = never.
	MaxConnectionIdle Duration `yaml:"max_connection_idle"`
	// MaxConnectionAge closes connections this old (so clients rebalance
	// across replicas); 0 = never.
	MaxConnectionAge Duration `yaml:"max_connection_age"`
	// MaxConnectionAgeGrace lets RPCs finish after MaxConnectionAge.
	MaxConnectionAgeGrace Duration `yaml:"max_connection_age_grace"`
}

func defaultServing(c *Config) {
	c.Logging = Logging{Level: "info", Format: "auto"}
	c.Admission = Admission{MaxConcurrent: admission.DefaultMaxConcurrent, MaxQueue: admission.DefaultMaxQueue,
		MaxWait: Duration(admission.DefaultMaxWait)}
	c.Metrics = Metrics{Listen: DefaultMetricsListen}
	c.GRPC = GRPC{MaxRecvBytes: DefaultMaxRecvBytes, MaxSendBytes: DefaultMaxSendBytes,
		MaxConcurrentStreams: DefaultMaxConcurrentStreams, MaxHeaderListBytes: DefaultMaxHeaderListBytes,
		MaxPendingStreams: DefaultMaxPendingStreams, MaxPendingStreamsPerTenant: DefaultMaxPendingStreamsPerTenant,
		FirstMessageTimeout: Duration(DefaultFirstMessageTimeout),
		ConnectionTimeout:   Duration(DefaultConnectionTimeout),
		MaxConnections:      DefaultMaxConnections, MaxConnectionsPerPeer: DefaultMaxConnectionsPerPeer,
		Keepalive: Keepalive{
			MinTime: Duration(10 * time.Second), PermitWithoutStream: true,
			Time: Duration(time.Minute), Timeout: Duration(20 * time.Second),
			MaxConnectionIdle: Duration(DefaultMaxConnectionIdle)}}
	c.MCP = defaultMCP()
}

// IsLoopback reports whether a listen address binds only loopback
// interfaces ("localhost", 127.0.0.0/8, ::1). ":7878" and "0.0.0.0:7878"
// bind every interface.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// AuthEnabled reports whether callers must authenticate: auth.enabled,
// or when unset, whether a listener (gRPC, or MCP when on) is not
// loopback; insecure_no_auth turns it off.
func (c *Config) AuthEnabled() bool {
	if c.Auth.InsecureNoAuth {
		return false
	}
	if c.Auth.Enabled != nil {
		return *c.Auth.Enabled
	}
	return !c.loopbackOnly()
}

// loopbackOnly reports whether every listener that serves executions
// binds loopback only.
func (c *Config) loopbackOnly() bool {
	return IsLoopback(c.Listen) && (!c.MCP.Enabled() || IsLoopback(c.MCP.Listen))
}

// listeners names the listeners that serve executions, for messages.
func (c *Config) listeners() string {
	if c.MCP.Enabled() {
		return fmt.Sprintf("listen %s and mcp.listen %s", c.Listen, c.MCP.Listen)
	}
	return "listen " + c.Listen
}

// AuthTenants converts the tenants section.
func (c *Config) AuthTenants() []auth.Tenant {
	out := make([]auth.Tenant, 0, len(c.Tenants))
	for _, t := range c.Tenants {
		out = append(out, auth.Tenant{Name: t.Name, TokenHashes: t.TokenHashes, ClientIdentities: t.ClientIdentities,
			Tools: t.Tools, Ceilings: limits.Limits(t.Ceilings), MaxConcurrent: t.MaxConcurrent, Rate: t.Rate, Burst: t.Burst})
	}
	return out
}

// AdmissionConfig converts the admission section.
func (c *Config) AdmissionConfig() admission.Config {
	return admission.Config{MaxConcurrent: c.Admission.MaxConcurrent, MaxQueue: c.Admission.MaxQueue, MaxWait: time.Duration(c.Admission.MaxWait)}
}

// CheckServe reports a configuration that must not serve: auth on with no
// credentials to accept, or auth off on a non-loopback listener without
// insecure_no_auth. ptcd calls it before listening (--print-config does
// not, so any configuration can be printed).
func (c *Config) CheckServe() error {
	creds := false
	for _, t := range c.Tenants {
		creds = creds || len(t.TokenHashes) > 0 || len(t.ClientIdentities) > 0
	}
	switch {
	case c.AuthEnabled() && !creds:
		return fmt.Errorf("config: auth is on (%s not loopback, or auth.enabled is true) but no tenant has token_hashes or client_identities: add a tenant (see `ptcd hash-token`), listen on loopback, or pass --insecure-no-auth on a trusted network", c.listeners())
	case !c.AuthEnabled() && !c.loopbackOnly() && !c.Auth.InsecureNoAuth:
		return fmt.Errorf("config: %s: not loopback and auth.enabled is false: ptcd refuses to serve everyone; configure tenants, or pass --insecure-no-auth on a trusted network", c.listeners())
	}
	return nil
}

// validateTransport checks the grpc section's transport bounds: each is
// positive (a bound that is off is no bound).
func (g GRPC) validateTransport() *Error {
	for _, n := range []struct {
		key string
		v   int
	}{
		{"max_concurrent_streams", g.MaxConcurrentStreams}, {"max_pending_streams", g.MaxPendingStreams},
		{"max_pending_streams_per_tenant", g.MaxPendingStreamsPerTenant},
		{"max_connections", g.MaxConnections}, {"max_connections_per_peer", g.MaxConnectionsPerPeer},
	} {
		if n.v <= 0 {
			return keyError("grpc."+n.key, "%d is not positive: use a count (see docs/config.md for the default)", n.v)
		}
	}
	switch {
	case g.MaxHeaderListBytes <= 0 || g.MaxHeaderListBytes > 1<<30:
		return keyError("grpc.max_header_list_bytes", "%s is out of range: use a size above 0 and at most 1GiB, such as \"16KiB\"", g.MaxHeaderListBytes)
	case g.FirstMessageTimeout <= 0:
		return keyError("grpc.first_message_timeout", "%s is not positive: use a duration such as \"20s\"", g.FirstMessageTimeout)
	case g.ConnectionTimeout <= 0:
		return keyError("grpc.connection_timeout", "%s is not positive: use a duration such as \"10s\"", g.ConnectionTimeout)
	}
	return nil
}
