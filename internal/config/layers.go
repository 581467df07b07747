package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/ptcrun/ptc/internal/limits"
)

// setting is one scalar key that the environment and flags can set.
type setting struct {
	key   string // dotted path, e.g. "limits.defaults.timeout"
	usage string
	field func(c *Config) flag.Value
}

type stringValue struct{ p *string }

// Set parses s into the field; it implements flag.Value.
func (v stringValue) Set(s string) error { *v.p = s; return nil }

// String formats the field; it implements flag.Value.
func (v stringValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

type boolValue struct{ p *bool }

// Set parses s into the field; it implements flag.Value.
func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a boolean: use true or false", s)
	}
	*v.p = b
	return nil
}

// String formats the field; it implements flag.Value.
func (v boolValue) String() string {
	if v.p == nil {
		return "false"
	}
	return strconv.FormatBool(*v.p)
}

// IsBoolFlag lets the flag be given without a value.
func (v boolValue) IsBoolFlag() bool { return true }

// intValue adapts an int field to flag.Value.
type intValue struct{ p *int }

// Set parses s into the field; it implements flag.Value.
func (v intValue) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	*v.p = int(n)
	return nil
}

// String formats the field; it implements flag.Value.
func (v intValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

// optBoolValue adapts a *bool field (unset, true or false) to flag.Value.
type optBoolValue struct{ p **bool }

// Set parses s into the field; it implements flag.Value.
func (v optBoolValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a boolean: use true or false", s)
	}
	*v.p = &b
	return nil
}

// String formats the field; it implements flag.Value.
func (v optBoolValue) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return strconv.FormatBool(**v.p)
}

// IsBoolFlag lets the flag be given without a value.
func (v optBoolValue) IsBoolFlag() bool { return true }

func servingSettings() []setting {
	return []setting{
		{"logging.level", "log level: debug, info, warn or error (debug also logs request payloads)", func(c *Config) flag.Value { return stringValue{&c.Logging.Level} }},
		{"logging.format", "log format: auto (text on a terminal, JSON otherwise), json or text", func(c *Config) flag.Value { return stringValue{&c.Logging.Format} }},
		{"auth.enabled", "require tenant credentials (default: on unless listening on loopback)", func(c *Config) flag.Value { return optBoolValue{&c.Auth.Enabled} }},
		{"auth.insecure_no_auth", "serve without authentication even on a non-loopback address", func(c *Config) flag.Value { return boolValue{&c.Auth.InsecureNoAuth} }},
		{"admission.max_concurrent", "executions running at once", func(c *Config) flag.Value { return intValue{&c.Admission.MaxConcurrent} }},
		{"admission.max_queue", "requests that may wait for a slot", func(c *Config) flag.Value { return intValue{&c.Admission.MaxQueue} }},
		{"admission.max_wait", "longest wait for a slot", func(c *Config) flag.Value { return &c.Admission.MaxWait }},
		{"metrics.listen", "HTTP address of /metrics, /healthz, /readyz (\"\" = off)", func(c *Config) flag.Value { return stringValue{&c.Metrics.Listen} }},
		{"tls.cert_file", "TLS certificate (PEM)", func(c *Config) flag.Value { return stringValue{&c.TLS.CertFile} }},
		{"tls.key_file", "TLS private key (PEM)", func(c *Config) flag.Value { return stringValue{&c.TLS.KeyFile} }},
		{"tls.client_ca_file", "CA bundle that verifies client certificates (mTLS)", func(c *Config) flag.Value { return stringValue{&c.TLS.ClientCAFile} }},
		{"tls.require_client_cert", "refuse connections without a client certificate", func(c *Config) flag.Value { return boolValue{&c.TLS.RequireClientCert} }},
		{"grpc.max_recv_bytes", "largest request message", func(c *Config) flag.Value { return &c.GRPC.MaxRecvBytes }},
		{"grpc.max_send_bytes", "largest response message", func(c *Config) flag.Value { return &c.GRPC.MaxSendBytes }},
		{"grpc.max_concurrent_streams", "streams open at once on one connection", func(c *Config) flag.Value { return intValue{&c.GRPC.MaxConcurrentStreams} }},
		{"grpc.max_header_list_bytes", "largest header list of one call", func(c *Config) flag.Value { return &c.GRPC.MaxHeaderListBytes }},
		{"grpc.max_pending_streams", "calls of all connections still receiving their first message", func(c *Config) flag.Value { return intValue{&c.GRPC.MaxPendingStreams} }},
		{"grpc.max_pending_streams_per_tenant", "calls of one tenant still receiving their first message", func(c *Config) flag.Value { return intValue{&c.GRPC.MaxPendingStreamsPerTenant} }},
		{"grpc.first_message_timeout", "longest wait of a call for its first message", func(c *Config) flag.Value { return &c.GRPC.FirstMessageTimeout }},
		{"grpc.connection_timeout", "longest TLS handshake and HTTP/2 preface of a new connection", func(c *Config) flag.Value { return &c.GRPC.ConnectionTimeout }},
		{"grpc.max_connections", "open gRPC connections of all peers", func(c *Config) flag.Value { return intValue{&c.GRPC.MaxConnections} }},
		{"grpc.max_connections_per_peer", "open gRPC connections of one IP address", func(c *Config) flag.Value { return intValue{&c.GRPC.MaxConnectionsPerPeer} }},
		{"grpc.keepalive.min_time", "shortest client ping interval allowed", func(c *Config) flag.Value { return &c.GRPC.Keepalive.MinTime }},
		{"grpc.keepalive.permit_without_stream", "allow client pings without active RPCs", func(c *Config) flag.Value { return boolValue{&c.GRPC.Keepalive.PermitWithoutStream} }},
		{"grpc.keepalive.time", "idle time before the server pings a client", func(c *Config) flag.Value { return &c.GRPC.Keepalive.Time }},
		{"grpc.keepalive.timeout", "how long the server waits for a ping answer", func(c *Config) flag.Value { return &c.GRPC.Keepalive.Timeout }},
		{"grpc.keepalive.max_connection_idle", "close connections idle this long (0 = never)", func(c *Config) flag.Value { return &c.GRPC.Keepalive.MaxConnectionIdle }},
		{"grpc.keepalive.max_connection_age", "close connections this old so clients rebalance (0 = never)", func(c *Config) flag.Value { return &c.GRPC.Keepalive.MaxConnectionAge }},
		{"grpc.keepalive.max_connection_age_grace", "time RPCs get to finish after max_connection_age", func(c *Config) flag.Value { return &c.GRPC.Keepalive.MaxConnectionAgeGrace }},
		{"mcp.listen", "HTTP address of the MCP endpoint (\"\" = off)", func(c *Config) flag.Value { return stringValue{&c.MCP.Listen} }},
		{"mcp.path", "path of the MCP endpoint", func(c *Config) flag.Value { return stringValue{&c.MCP.Path} }},
		{"mcp.session_timeout", "close MCP sessions idle this long", func(c *Config) flag.Value { return &c.MCP.SessionTimeout }},
		{"mcp.max_sessions_per_tenant", "open MCP sessions one tenant may have", func(c *Config) flag.Value { return intValue{&c.MCP.MaxSessionsPerTenant} }},
		{"mcp.max_sessions", "open MCP sessions all tenants may have", func(c *Config) flag.Value { return intValue{&c.MCP.MaxSessions} }},
		{"mcp.idle_timeout", "close MCP keep-alive connections without a request this long", func(c *Config) flag.Value { return &c.MCP.IdleTimeout }},
		{"mcp.read_header_timeout", "longest reading of an MCP request's headers", func(c *Config) flag.Value { return &c.MCP.ReadHeaderTimeout }},
		{"mcp.max_header_bytes", "largest headers of an MCP request", func(c *Config) flag.Value { return &c.MCP.MaxHeaderBytes }},
		{"mcp.body_read_timeout", "longest reading of an MCP request's body", func(c *Config) flag.Value { return &c.MCP.BodyReadTimeout }},
		{"mcp.max_body_bytes_in_flight", "request-body bytes all MCP requests may hold at once", func(c *Config) flag.Value { return &c.MCP.MaxBodyBytesInFlight }},
		{"mcp.write_timeout", "longest write of an MCP response to a client that does not read", func(c *Config) flag.Value { return &c.MCP.WriteTimeout }},
		{"mcp.max_connections", "open MCP connections of all peers", func(c *Config) flag.Value { return intValue{&c.MCP.MaxConnections} }},
		{"mcp.max_connections_per_peer", "open MCP connections of one IP address", func(c *Config) flag.Value { return intValue{&c.MCP.MaxConnectionsPerPeer} }},
		{"mcp.description_bytes", "most bytes of tool declarations in the execute tool's description (0 = none: point to search)", func(c *Config) flag.Value { return &c.MCP.DescriptionBytes }},
	}
}

// limitSettings are the keys of one side of the limits section, one per
// row of the limits table: limits.<which>.<field>.
func limitSettings(which string, pick func(c *Config) *limits.Limits) []setting {
	var out []setting
	for _, f := range limits.Fields() {
		out = append(out, setting{"limits." + which + "." + f.Name, strings.TrimSuffix(which, "s") + " " + f.Doc,
			func(c *Config) flag.Value { return limits.Value{L: pick(c), Field: f} }})
	}
	return out
}

func settings() []setting {
	s := []setting{
		{"listen", "gRPC listen address (host:port)", func(c *Config) flag.Value { return stringValue{&c.Listen} }},
		{"demo_tools", "register the built-in demo tools", func(c *Config) flag.Value { return boolValue{&c.DemoTools} }},
		{"shutdown_grace", "how long shutdown waits for running executions", func(c *Config) flag.Value { return &c.ShutdownGrace }},
	}
	s = append(s, servingSettings()...)
	s = append(s, tracingSettings()...)
	s = append(s,
		setting{"workers.mode", "worker (isolated processes) or inprocess", func(c *Config) flag.Value { return stringValue{&c.Workers.Mode} }},
		setting{"workers.insecure_inprocess", "allow mode inprocess: scripts run inside ptcd, unsandboxed (trusted scripts only)", func(c *Config) flag.Value { return boolValue{&c.Workers.InsecureInProcess} }},
		setting{"workers.idle", "started workers kept waiting", func(c *Config) flag.Value { return intValue{&c.Workers.Idle} }},
		setting{"workers.idle_timeout", "how long a worker beyond workers.idle may stay idle before it stops", func(c *Config) flag.Value { return &c.Workers.IdleTimeout }},
		setting{"workers.max", "worker processes alive at once", func(c *Config) flag.Value { return intValue{&c.Workers.Max} }},
		setting{"workers.executions_per_worker", "executions one worker runs at once", func(c *Config) flag.Value { return intValue{&c.Workers.ExecutionsPerWorker} }},
		setting{"workers.recycle_after", "executions after which a worker is replaced", func(c *Config) flag.Value { return intValue{&c.Workers.RecycleAfter} }},
		setting{"durable.ttl", "how long a continuation can be resumed", func(c *Config) flag.Value { return &c.Durable.TTL }},
		setting{"durable.max_token_bytes", "largest continuation (larger paused states go to the store)", func(c *Config) flag.Value { return &c.Durable.MaxTokenBytes }},
		setting{"durable.max_bytes_per_tenant", "paused states the store keeps for one tenant, in all", func(c *Config) flag.Value { return &c.Durable.MaxBytesPerTenant }},
		setting{"durable.max_bytes", "paused states the store keeps for all tenants (0: no bound beyond each tenant's)", func(c *Config) flag.Value { return &c.Durable.MaxBytes }},
		setting{"durable.outcome_retention", "how long a Resume's outcome is kept for a retry with the same continuation and answers", func(c *Config) flag.Value { return &c.Durable.OutcomeRetention }},
		setting{"durable.store.file", "file that keeps large paused states and used continuations (this replica)", func(c *Config) flag.Value { return stringValue{&c.Durable.Store.File} }},
		setting{"durable.store.redis_url_env", "environment variable holding the Redis URL of a store shared by replicas", func(c *Config) flag.Value { return stringValue{&c.Durable.Store.RedisURLEnv} }},
		setting{"durable.store.postgres_dsn_env", "environment variable holding the PostgreSQL connection string of a store shared by replicas", func(c *Config) flag.Value { return stringValue{&c.Durable.Store.PostgresDSNEnv} }},
		setting{"durable.store.postgres_dsn_file", "file holding the PostgreSQL connection string of a store shared by replicas", func(c *Config) flag.Value { return stringValue{&c.Durable.Store.PostgresDSNFile} }},
		setting{"durable.parked.max", "paused executions kept in memory (0: none)", func(c *Config) flag.Value { return intValue{&c.Durable.Parked.Max} }},
		setting{"durable.lease.ttl", "how long a resume's lease lasts without a renewal before a retry may take the resume over", func(c *Config) flag.Value { return &c.Durable.Lease.TTL }},
		setting{"durable.lease.renew_every", "how often the replica running a resume renews its lease", func(c *Config) flag.Value { return &c.Durable.Lease.RenewEvery }},
		setting{"durable.forward.advertise", "this replica's address as other replicas reach it: a Resume of an execution parked here is forwarded here", func(c *Config) flag.Value { return stringValue{&c.Durable.Forward.Advertise} }},
		setting{"durable.forward.timeout", "bound of a Resume forwarded to the replica that parked its execution", func(c *Config) flag.Value { return &c.Durable.Forward.Timeout }},
		setting{"durable.lease.max_takeovers", "takeovers of one resume after its replica stopped (0: none)", func(c *Config) flag.Value { return intValue{&c.Durable.Lease.MaxTakeovers} }},
	)
	s = append(s, idempotencySettings()...)
	s = append(s, wasmSettings()...)
	s = append(s, pythonSettings()...)
	s = append(s, limitSettings("defaults", func(c *Config) *limits.Limits { return (*limits.Limits)(&c.Limits.Defaults) })...)
	s = append(s, limitSettings("ceilings", func(c *Config) *limits.Limits { return (*limits.Limits)(&c.Limits.Ceilings) })...)
	return s
}

// Keys returns the keys that Set, the environment and flags can set, in
// dotted form ("limits.defaults.timeout").
func Keys() []string {
	var out []string
	for _, s := range settings() {
		out = append(out, s.key)
	}
	sort.Strings(out)
	return out
}

// EnvName returns the environment variable of a key:
// "limits.defaults.timeout" is PTC_LIMITS_DEFAULTS_TIMEOUT.
func EnvName(key string) string {
	return "PTC_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// FlagName returns the flag of a key: "limits.defaults.timeout" is
// -limits.defaults.timeout and "demo_tools" is -demo-tools.
func FlagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// Set sets one key from its string form, as the environment and flags do.
func (c *Config) Set(key, value string) error {
	for _, s := range settings() {
		if s.key == key {
			if err := s.field(c).Set(value); err != nil {
				return keyError(key, "%v", err)
			}
			return nil
		}
	}
	return keyError(key, "cannot be set this way: use one of %s", strings.Join(Keys(), ", "))
}

// Options says where Load reads the layers from.
type Options struct {
	// File is the YAML file; "" means none (defaults only).
	File string
	// LookupEnv reads PTC_ variables; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Flags is a parsed flag set: the flags that were set on the command
	// line and are named after a key (see FlagName and DefineFlags)
	// override the rest. Other flags are ignored.
	Flags *flag.FlagSet
	// Overrides are applied last, key to value (see Set).
	Overrides map[string]string
}

// Load reads the file, applies PTC_ environment variables, then flags and
// overrides, and validates the result. Its errors are *Error values that
// name the key and where the value came from: the file's line and column,
// the environment variable or the flag.
func Load(o Options) (*Config, error) {
	c := Default()
	var doc ast.Node
	if o.File != "" {
		data, err := readFile(o.File)
		if err != nil {
			return nil, err
		}
		if doc, err = c.decode(o.File, data); err != nil {
			return nil, err
		}
	}
	// origins records the keys set after the file, by whom.
	origins := map[string]string{}
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	for _, s := range settings() {
		if v, ok := lookup(EnvName(s.key)); ok {
			origins[s.key] = "environment variable " + EnvName(s.key)
			if err := s.field(c).Set(v); err != nil {
				return nil, &Error{Key: s.key, Origin: origins[s.key], Msg: err.Error()}
			}
		}
	}
	if o.Flags != nil {
		if !o.Flags.Parsed() {
			return nil, errors.New("config: parse the flags before loading the configuration")
		}
		byFlag := map[string]setting{}
		for _, s := range settings() {
			byFlag[FlagName(s.key)] = s
			byFlag[s.key] = s
		}
		var err error
		o.Flags.Visit(func(f *flag.Flag) {
			s, ok := byFlag[f.Name]
			if !ok || err != nil {
				return
			}
			origins[s.key] = "flag -" + f.Name
			if serr := s.field(c).Set(f.Value.String()); serr != nil {
				err = &Error{Key: s.key, Origin: origins[s.key], Msg: serr.Error()}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(o.Overrides))
	for k := range o.Overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		origins[k] = "command line"
		if err := c.Set(k, o.Overrides[k]); err != nil {
			locateIn(err, o.File, doc, origins)
			return nil, err
		}
	}
	if err := c.Validate(); err != nil {
		locateIn(err, o.File, doc, origins)
		return nil, err
	}
	return c, nil
}

// locateIn completes err, an *Error from Set or Validate, with where its
// key's value came from: an environment variable or a flag (origins), else
// the file, at the value's line and column when the file sets the key.
func locateIn(err error, file string, doc ast.Node, origins map[string]string) {
	var e *Error
	if !errors.As(err, &e) || e.Line > 0 || e.Origin != "" {
		return
	}
	if o, ok := origins[e.Key]; ok && e.Key != "" {
		e.Origin = o
		return
	}
	e.File = file
	e.Line, e.Column = locate(doc, e.Key)
}

// DefineFlags defines one string flag per key on fs (see FlagName), with
// no default of its own, so that Load can layer the ones that are set.
func DefineFlags(fs *flag.FlagSet) {
	probe := Default()
	for _, s := range settings() {
		usage := s.usage + " (config key " + s.key + ", env " + EnvName(s.key) + ")"
		if b, ok := s.field(probe).(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			fs.Bool(FlagName(s.key), false, usage)
			continue
		}
		fs.String(FlagName(s.key), "", usage)
	}
}

// UnknownEnv returns the PTC_ variables of environ ("KEY=value" entries, as
// os.Environ gives) that are neither a key's variable nor named by c's
// tool sources: most likely misspelt keys, worth a warning at start-up.
func UnknownEnv(environ []string, c *Config) []string {
	known := map[string]bool{}
	for _, k := range Keys() {
		known[EnvName(k)] = true
	}
	for _, k := range c.Durable.Keys {
		known[k.SecretEnv] = true
	}
	for _, v := range []string{c.Durable.Store.RedisURLEnv, c.Durable.Store.PostgresDSNEnv} {
		if v != "" {
			known[v] = true
		}
	}
	for _, v := range c.Tracing.HeadersFromEnv {
		known[v] = true
	}
	for _, s := range c.ToolSources {
		for _, m := range []map[string]string{s.EnvFromEnv, s.HeadersFromEnv} {
			for _, v := range m {
				known[v] = true
			}
		}
		for _, t := range s.Tools {
			for _, v := range t.HeadersFromEnv {
				known[v] = true
			}
		}
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PTC_") && !known[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
