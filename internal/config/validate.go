package config

import (
	"fmt"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// Validate reports the first problem of c as an *Error that names the
// key, its value and what to do (Load adds where the value came from).
func (c *Config) Validate() error {
	for _, check := range []func() *Error{
		c.Workers.validate, c.validateTop, c.validateLimits, c.validateServing, c.validateTLS,
		c.MCP.validate, c.validateTenants, c.validateTracing, c.Durable.validate, c.Idempotency.validate, c.Approvals.validate,
		c.validateSources, c.WASM.validate, c.Python.validate,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (w Workers) validate() *Error {
	switch {
	case w.Mode != "worker" && w.Mode != "inprocess":
		return keyError("workers.mode", "%q is not a mode: use worker (isolated processes) or inprocess", w.Mode)
	case w.Idle < 0:
		return keyError("workers.idle", "%d is negative: use 0 to keep no worker waiting, or more", w.Idle)
	case w.Max < 1:
		return keyError("workers.max", "%d is below 1: allow at least one worker process", w.Max)
	case w.ExecutionsPerWorker < 1:
		return keyError("workers.executions_per_worker", "%d is below 1: use 1 (the strongest isolation) or more", w.ExecutionsPerWorker)
	case w.RecycleAfter < 1:
		return keyError("workers.recycle_after", "%d is below 1: use a number of executions such as 1000", w.RecycleAfter)
	case w.IdleTimeout < 0:
		return keyError("workers.idle_timeout", "%s is negative: use a duration such as \"30s\"", w.IdleTimeout)
	case w.Mode == "inprocess" && !w.InsecureInProcess:
		return keyError("workers.mode", "inprocess runs scripts inside ptcd itself: no process isolation, "+
			"no OS memory limit, and ptcd's own files, network and memory within reach of any engine bug — not a sandbox "+
			"for untrusted scripts. Use mode worker (the default), or, if every script is trusted, also set "+
			"workers.insecure_inprocess: true (PTC_WORKERS_INSECURE_INPROCESS=true, -workers.insecure-inprocess)")
	}
	return nil
}

func (c *Config) validateTop() *Error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return keyError("listen", "%q is not host:port: write e.g. \"127.0.0.1:7878\" or \":7878\"", c.Listen)
	}
	if c.ShutdownGrace < 0 {
		return keyError("shutdown_grace", "%s is negative: use a duration such as \"15s\"", c.ShutdownGrace)
	}
	return nil
}

// validateLimits checks every limit of both sides: none negative, no
// default above its ceiling.
func (c *Config) validateLimits() *Error {
	d, ceil := limits.Limits(c.Limits.Defaults), limits.Limits(c.Limits.Ceilings)
	if err := checkLimits("limits.defaults.", d); err != nil {
		return err
	}
	if err := checkLimits("limits.ceilings.", ceil); err != nil {
		return err
	}
	for _, f := range limits.Fields() {
		if dv, cv := f.Get(d), f.Get(ceil); cv > 0 && dv > cv {
			return keyError("limits.defaults."+f.Name, "%s is above its ceiling limits.ceilings.%s (%s): lower the default or raise the ceiling",
				f.Format(dv), f.Name, f.Format(cv))
		}
	}
	return nil
}

// checkLimits reports a negative limit of l, whose keys start with prefix.
func checkLimits(prefix string, l limits.Limits) *Error {
	for _, f := range limits.Fields() {
		if v := f.Get(l); v < 0 {
			return keyError(prefix+f.Name, "%s is negative: use 0 for the built-in value or a positive %s", f.Format(v), f.Unit)
		}
	}
	return nil
}

// validateServing checks logging, admission, metrics and grpc.
func (c *Config) validateServing() *Error {
	switch c.Logging.Level {
	case "debug", "info", "warn", "error":
	default:
		return keyError("logging.level", "%q is not a level: use debug, info, warn or error", c.Logging.Level)
	}
	switch c.Logging.Format {
	case "auto", "json", "text":
	default:
		return keyError("logging.format", "%q is not a format: use auto (text on a terminal, JSON otherwise), json or text", c.Logging.Format)
	}
	a := c.Admission
	switch {
	case a.MaxConcurrent <= 0:
		return keyError("admission.max_concurrent", "%d is not positive: allow at least 1 execution at once (the default is %d)", a.MaxConcurrent, admission.DefaultMaxConcurrent)
	case a.MaxQueue < 0:
		return keyError("admission.max_queue", "%d is negative: use 0 to refuse a request at once when every slot is busy, or more", a.MaxQueue)
	case a.MaxWait < 0:
		return keyError("admission.max_wait", "%s is negative: use a duration such as \"10s\"", a.MaxWait)
	}
	if err := c.AdmissionConfig().Validate(); err != nil {
		return keyError("admission", "%v", err)
	}
	if c.Metrics.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Metrics.Listen); err != nil {
			return keyError("metrics.listen", "%q is not host:port: write e.g. \"127.0.0.1:9090\", or \"\" to turn metrics off", c.Metrics.Listen)
		}
	}
	for _, s := range []struct {
		key string
		v   ByteSize
	}{{"grpc.max_recv_bytes", c.GRPC.MaxRecvBytes}, {"grpc.max_send_bytes", c.GRPC.MaxSendBytes}} {
		if s.v <= 0 || s.v > 1<<31-1 {
			return keyError(s.key, "%s is out of range: use a size above 0 and below 2GiB", s.v)
		}
	}
	if err := c.GRPC.validateTransport(); err != nil {
		return err
	}
	k := c.GRPC.Keepalive
	for _, d := range []struct {
		key string
		v   Duration
	}{
		{"min_time", k.MinTime}, {"time", k.Time}, {"timeout", k.Timeout}, {"max_connection_idle", k.MaxConnectionIdle},
		{"max_connection_age", k.MaxConnectionAge}, {"max_connection_age_grace", k.MaxConnectionAgeGrace},
	} {
		if d.v < 0 {
			return keyError("grpc.keepalive."+d.key, "%s is negative: use 0 or a positive duration", d.v)
		}
	}
	return nil
}

func (c *Config) validateTLS() *Error {
	t := c.TLS
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		return keyError("tls.key_file", "is not set but tls.cert_file is: set both (TLS) or neither (plaintext)")
	case t.KeyFile != "" && t.CertFile == "":
		return keyError("tls.cert_file", "is not set but tls.key_file is: set both (TLS) or neither (plaintext)")
	case t.ClientCAFile != "" && t.CertFile == "":
		return keyError("tls.client_ca_file", "needs tls.cert_file and tls.key_file: mTLS runs over TLS")
	case t.RequireClientCert && t.ClientCAFile == "":
		return keyError("tls.require_client_cert", "needs tls.client_ca_file to verify the certificates")
	}
	return nil
}

// validateTenants checks each tenant, naming the key: its name, quotas,
// ceilings (which can only lower limits.ceilings), tool patterns, token
// hashes and client identities (each unique across tenants).
func (c *Config) validateTenants() *Error {
	names := map[string]int{}
	hashes := map[string]string{}
	identities := map[string]string{}
	for i, t := range c.Tenants {
		key := fmt.Sprintf("tenants[%d]", i)
		if t.Name == "" {
			return keyError(key+".name", "is required: name the tenant (it appears in logs and metrics)")
		}
		if j, dup := names[t.Name]; dup {
			return keyError(key+".name", "%q is also the name of tenants[%d]: give each tenant its own name", t.Name, j)
		}
		names[t.Name] = i
		switch {
		case t.MaxConcurrent < 0:
			return keyError(key+".max_concurrent", "%d is negative: use 0 for no quota", t.MaxConcurrent)
		case t.Rate < 0:
			return keyError(key+".rate", "%g is negative: use 0 for no rate limit", t.Rate)
		case t.Burst < 0:
			return keyError(key+".burst", "%d is negative: use 0 for the default (the rate)", t.Burst)
		}
		ceil := limits.Limits(t.Ceilings)
		if err := checkLimits(key+".ceilings.", ceil); err != nil {
			return err
		}
		server := limits.Limits(c.Limits.Ceilings)
		for _, f := range limits.Fields() {
			if tv, sv := f.Get(ceil), f.Get(server); sv > 0 && tv > sv {
				return keyError(key+".ceilings."+f.Name, "%s is above limits.ceilings.%s (%s): a tenant's ceiling can only lower the server's; lower it or raise limits.ceilings.%s",
					f.Format(tv), f.Name, f.Format(sv), f.Name)
			}
		}
		for k, p := range t.Tools {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return keyError(fmt.Sprintf("%s.tools[%d]", key, k), "%q is not a tool name or glob: use names or globs such as \"crm.*\"", p)
			}
		}
		for k, h := range t.TokenHashes {
			hk := fmt.Sprintf("%s.token_hashes[%d]", key, k)
			if err := checkTokenHash(h); err != "" {
				return keyError(hk, "%s", err)
			}
			if other, dup := hashes[strings.ToLower(h)]; dup {
				return keyError(hk, "is also a token hash of tenant %s: give each tenant its own tokens", other)
			}
			hashes[strings.ToLower(h)] = t.Name
		}
		for k, id := range t.ClientIdentities {
			ik := fmt.Sprintf("%s.client_identities[%d]", key, k)
			if id == "" {
				return keyError(ik, "is empty: write a certificate's subject CN or URI SAN")
			}
			if other, dup := identities[id]; dup {
				return keyError(ik, "%q is also a client identity of tenant %s: give each tenant its own", id, other)
			}
			identities[id] = t.Name
		}
		if len(t.ClientIdentities) > 0 && c.TLS.ClientCAFile == "" {
			return keyError(key+".client_identities", "need tls.client_ca_file, which verifies client certificates: set it, or use token_hashes")
		}
	}
	if _, err := auth.New(true, c.AuthTenants()); err != nil {
		return keyError("tenants", "%v", err)
	}
	return nil
}

// checkTokenHash says what is wrong with a stored token hash, or "".
func checkTokenHash(h string) string {
	if !strings.HasPrefix(h, auth.HashPrefix) {
		// A pasted token is a secret: show only its start.
		shown := strconv.Quote(h)
		if r := []rune(h); len(r) > 4 {
			shown = strconv.Quote(string(r[:4])) + "…"
		}
		return fmt.Sprintf("%s is not a token hash: store the output of `ptcd hash-token` (%s followed by 64 hex digits), never the token itself", shown, auth.HashPrefix)
	}
	if _, err := auth.ParseHash(h); err != nil {
		return fmt.Sprintf("is not a token hash (%v): store the output of `ptcd hash-token`", err)
	}
	return ""
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validateSources checks every tool source.
func (c *Config) validateSources() *Error {
	names := map[string]int{}
	for i := range c.ToolSources {
		s := &c.ToolSources[i]
		key := fmt.Sprintf("tool_sources[%d]", i)
		if err := s.validate(key); err != nil {
			return err
		}
		if j, dup := names[s.Name]; dup {
			return keyError(key+".name", "%q is also the name of tool_sources[%d]: give each source its own name", s.Name, j)
		}
		names[s.Name] = i
	}
	return nil
}

// validate checks a tool source whose keys start with key.
func (s *ToolSource) validate(key string) *Error {
	if err := tools.ValidateName(s.Name); err != nil || strings.Contains(s.Name, ".") {
		return keyError(key+".name", "%q is not a source name: use letters, digits, _ and - (no dots); it is the first part of the source's tool names", s.Name)
	}
	switch s.Type {
	case TypeMCPStdio:
		if s.Command == "" {
			return keyError(key+".command", "is required for type mcp_stdio: the program that serves MCP on its stdin and stdout")
		}
	case TypeMCPHTTP:
		if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			return keyError(key+".url", "%q must start with http:// or https://", s.URL)
		}
	case TypeHTTP:
		if len(s.Tools) == 0 {
			return keyError(key+".tools", "is required for type http: list its endpoints")
		}
	case "":
		return keyError(key+".type", "is required: use mcp_stdio, mcp_http or http")
	default:
		return keyError(key+".type", "%q is not a source type: use mcp_stdio, mcp_http or http", s.Type)
	}
	for _, f := range []struct {
		field string
		set   bool
		types []string
	}{
		{"command", s.Command != "", []string{TypeMCPStdio}},
		{"args", len(s.Args) > 0, []string{TypeMCPStdio}},
		{"dir", s.Dir != "", []string{TypeMCPStdio}},
		{"env", len(s.Env) > 0, []string{TypeMCPStdio}},
		{"env_from_env", len(s.EnvFromEnv) > 0, []string{TypeMCPStdio}},
		{"url", s.URL != "", []string{TypeMCPHTTP}},
		{"headers_from_env", len(s.HeadersFromEnv) > 0, []string{TypeMCPHTTP, TypeHTTP}},
		{"allow", len(s.Allow) > 0, []string{TypeMCPStdio, TypeMCPHTTP}},
		{"deny", len(s.Deny) > 0, []string{TypeMCPStdio, TypeMCPHTTP}},
		{"connect_timeout", s.ConnectTimeout != 0, []string{TypeMCPStdio, TypeMCPHTTP}},
		{"approval", s.Approval != "", []string{TypeMCPStdio, TypeMCPHTTP}},
		{"tools", len(s.Tools) > 0, []string{TypeHTTP}},
	} {
		if f.set && !contains(f.types, s.Type) {
			return keyError(key+"."+f.field, "applies only to type %s, and this source is %s: remove it", strings.Join(f.types, " or "), s.Type)
		}
	}
	if err := checkEnvNames(key+".env_from_env", s.EnvFromEnv); err != nil {
		return err
	}
	if err := checkEnvNames(key+".headers_from_env", s.HeadersFromEnv); err != nil {
		return err
	}
	for k := range s.Env {
		if !envNameRE.MatchString(k) {
			return keyError(key+".env", "%q is not a valid variable name: use letters, digits and _", k)
		}
	}
	if s.ConnectTimeout < 0 {
		return keyError(key+".connect_timeout", "%s is negative: use 0 for the default (30s) or a positive duration", s.ConnectTimeout)
	}
	switch s.Approval {
	case "", ApprovalNone, ApprovalAll, ApprovalNotReadOnly, ApprovalDestructive:
	default:
		return keyError(key+".approval", "%q is not an approval policy: use none, all, not_read_only or destructive", s.Approval)
	}
	if err := s.Policy.validate(key + ".policy"); err != nil {
		return err
	}
	return s.validateTools(key)
}

// validateTools checks the endpoints of an http source.
func (s *ToolSource) validateTools(key string) *Error {
	names := map[string]int{}
	for i, t := range s.Tools {
		tk := fmt.Sprintf("%s.tools[%d]", key, i)
		if t.Name == "" {
			return keyError(tk+".name", "is required: the tool is called as %s.<name>", s.Name)
		}
		if j, dup := names[t.Name]; dup {
			return keyError(tk+".name", "%q is also the name of tools[%d]: give each endpoint its own name", t.Name, j)
		}
		names[t.Name] = i
		if err := checkEnvNames(tk+".headers_from_env", t.HeadersFromEnv); err != nil {
			return err
		}
		if t.Policy != nil {
			if err := t.Policy.validate(tk + ".policy"); err != nil {
				return err
			}
		}
		if _, err := schemaJSON(t.InputSchema); err != nil {
			return keyError(tk+".input_schema", "%v", err)
		}
		if _, err := schemaJSON(t.OutputSchema); err != nil {
			return keyError(tk+".output_schema", "%v", err)
		}
		if t.MaxResponseBytes < 0 {
			return keyError(tk+".max_response_bytes", "%s is negative: use 0 for the default (1MiB) or a positive size", t.MaxResponseBytes)
		}
		if t.Timeout < 0 {
			return keyError(tk+".timeout", "%s is negative: use 0 for the policy's timeout or a positive duration", t.Timeout)
		}
	}
	return nil
}

// validate checks a policy whose keys start with key.
func (p Policy) validate(key string) *Error {
	switch {
	case p.Timeout < 0:
		return keyError(key+".timeout", "%s is negative: use 0 for no timeout or a positive duration", p.Timeout)
	case p.Retries < 0:
		return keyError(key+".retries", "%d is negative: use 0 for no retries", p.Retries)
	case p.Retries > 20:
		return keyError(key+".retries", "%d is above 20: use fewer retries (with backoff, 20 already wait minutes)", p.Retries)
	case p.BackoffBase < 0:
		return keyError(key+".backoff_base", "%s is negative: use 0 for the default or a positive duration", p.BackoffBase)
	case p.BackoffMax < 0:
		return keyError(key+".backoff_max", "%s is negative: use 0 for the default or a positive duration", p.BackoffMax)
	case p.MaxCallsPerExecution < 0:
		return keyError(key+".max_calls_per_execution", "%d is negative: use 0 for no bound", p.MaxCallsPerExecution)
	case p.MaxConcurrent < 0:
		return keyError(key+".max_concurrent", "%d is negative: use 0 for no bound", p.MaxConcurrent)
	}
	if err := p.Config().Validate(); err != nil {
		return keyError(key, "%v", err)
	}
	return nil
}

// checkEnvNames checks that every value of m, the mapping at key, names
// an environment variable: a value that does not look like a name is
// probably a secret pasted into the file.
func checkEnvNames(key string, m map[string]string) *Error {
	for k, v := range m {
		if k == "" {
			return keyError(key, "has an empty name")
		}
		if !envNameRE.MatchString(v) {
			return keyError(key+"."+k, "must name an environment variable (e.g. GITHUB_AUTH), not hold the value: secrets come only from the environment")
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
