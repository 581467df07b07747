// Package config reads ptcd's one configuration file (YAML) and layers
// PTC_ environment variables and command-line flags over it: file <
// environment < flags. Decoding is strict: an unknown key is an error that
// names it. Print writes the effective configuration back as YAML for
// `ptcd --print-config`.
//
// Secrets never live in the file: a header or environment value that is
// secret is given as the name of an environment variable
// (headers_from_env: {Authorization: GITHUB_AUTH}), resolved only when the
// sources start, so a printout shows the variable's name, never its value.
//
// Besides limits and tool sources it holds the serving sections: logging,
// auth and tenants, admission, metrics, tls and grpc (see
// docs/operations.md), and workers (the execution isolation).
//
// Package config is wiring for cmd/ptcd: it may import tool sources,
// internal/limits, internal/auth, internal/admission and the root package
// (for its request bounds), and nothing imports it but commands.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/policy"
)

// Defaults of the top-level keys.
const (
	DefaultListen        = "127.0.0.1:7878"
	DefaultShutdownGrace = 15 * time.Second
	// DefaultIdleTimeout is workers.idle_timeout's default.
	DefaultIdleTimeout = 30 * time.Second
)

// MaxFileBytes bounds the configuration file.
const MaxFileBytes = 4 << 20

// Source types of a tool source.
const (
	TypeMCPStdio = "mcp_stdio"
	TypeMCPHTTP  = "mcp_http"
	TypeHTTP     = "http"
)

// Config is ptcd's configuration. The zero value is not useful: start from
// Default or Load.
type Config struct {
	// Listen is the gRPC listen address, host:port.
	Listen string `yaml:"listen"`
	// Limits are the operator's defaults and ceilings of every execution.
	Limits Limits `yaml:"limits"`
	// ToolSources are the MCP servers and HTTP endpoints whose tools ptcd
	// serves.
	ToolSources []ToolSource `yaml:"tool_sources"`
	// DemoTools registers the built-in demo tools.
	DemoTools bool `yaml:"demo_tools"`
	// ShutdownGrace is how long a shutdown waits for running executions.
	ShutdownGrace Duration `yaml:"shutdown_grace"`

	// Logging sets the level and format of ptcd's logs.
	Logging Logging `yaml:"logging"`
	// Auth says whether callers must authenticate.
	Auth Auth `yaml:"auth"`
	// Tenants are the callers, their credentials and what they may do.
	Tenants []Tenant `yaml:"tenants,omitempty"`
	// Admission bounds concurrent and queued executions.
	Admission Admission `yaml:"admission"`
	// Metrics is the HTTP listener of /metrics, /healthz and /readyz.
	Metrics Metrics `yaml:"metrics"`
	// TLS secures the gRPC listener.
	TLS TLS `yaml:"tls,omitempty"`
	// GRPC holds transport settings: message sizes and keepalive.
	GRPC GRPC `yaml:"grpc"`

	// Workers configures the worker processes that run JavaScript and
	// TypeScript executions.
	Workers Workers `yaml:"workers"`
}

// Limits holds the limits section. Each side is a limits.Limits, written
// field by field as the limits table names them (durations such as "30s",
// byte sizes such as "64MiB").
type Limits struct {
	// Defaults apply to a request that leaves a limit unset.
	Defaults limits.Limits `yaml:"defaults"`
	// Ceilings are the most a request may ask for.
	Ceilings limits.Limits `yaml:"ceilings"`
}

// Policy returns the limits policy of the configuration.
func (c *Config) Policy() limits.Policy {
	return limits.Policy{Defaults: c.Limits.Defaults, Ceilings: c.Limits.Ceilings}
}

// ToolSource is one entry of tool_sources. Type selects which other fields
// apply.
type ToolSource struct {
	// Name is the first segment of the source's tool names.
	Name string `yaml:"name"`
	// Type is mcp_stdio, mcp_http or http.
	Type string `yaml:"type"`
	// Required makes ptcd fail to start when the source cannot start;
	// when false the source is marked unavailable. Default true.
	Required *bool `yaml:"required,omitempty"`

	// Command, Args and Dir start an mcp_stdio server.
	Command string   `yaml:"command,omitempty"`
	Args    []string `yaml:"args,omitempty"`
	Dir     string   `yaml:"dir,omitempty"`
	// Env sets literal, non-secret environment variables of an mcp_stdio
	// server; it is printed in full.
	Env map[string]string `yaml:"env,omitempty"`
	// EnvFromEnv sets environment variables of an mcp_stdio server from
	// ptcd's own: {GITHUB_TOKEN: PTC_GITHUB_TOKEN}.
	EnvFromEnv map[string]string `yaml:"env_from_env,omitempty"`

	// URL is the endpoint of an mcp_http server.
	URL string `yaml:"url,omitempty"`
	// HeadersFromEnv maps header names to environment variables, for
	// mcp_http servers (and as the default of every http tool).
	HeadersFromEnv map[string]string `yaml:"headers_from_env,omitempty"`

	// Allow and Deny filter an MCP server's tools by name (glob patterns).
	Allow []string `yaml:"allow,omitempty"`
	Deny  []string `yaml:"deny,omitempty"`
	// ConnectTimeout bounds connecting to an MCP server; 0 means 30s.
	ConnectTimeout Duration `yaml:"connect_timeout,omitempty"`

	// Policy applies to every tool of the source.
	Policy Policy `yaml:"policy,omitempty"`

	// Tools are the endpoints of an http source.
	Tools []HTTPTool `yaml:"tools,omitempty"`
}

// IsRequired reports the effective value of Required.
func (s *ToolSource) IsRequired() bool { return s.Required == nil || *s.Required }

// Policy is a tool policy as written in the file (see tools/policy).
type Policy struct {
	Timeout              Duration `yaml:"timeout,omitempty"`
	Retries              int      `yaml:"retries,omitempty"`
	BackoffBase          Duration `yaml:"backoff_base,omitempty"`
	BackoffMax           Duration `yaml:"backoff_max,omitempty"`
	MaxCallsPerExecution int      `yaml:"max_calls_per_execution,omitempty"`
	MaxConcurrent        int      `yaml:"max_concurrent,omitempty"`
}

// Config converts p to a policy.Config.
func (p Policy) Config() policy.Config {
	return policy.Config{
		Timeout:              time.Duration(p.Timeout),
		Retries:              p.Retries,
		BackoffBase:          time.Duration(p.BackoffBase),
		BackoffMax:           time.Duration(p.BackoffMax),
		MaxCallsPerExecution: p.MaxCallsPerExecution,
		MaxConcurrent:        p.MaxConcurrent,
	}
}

// HTTPTool is one endpoint of an http source.
type HTTPTool struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Method is GET (the default), POST, PUT, PATCH, DELETE or HEAD.
	Method string `yaml:"method,omitempty"`
	// URL is a template: {arg} is filled from the arguments.
	URL string `yaml:"url"`
	// HeadersFromEnv adds to (and overrides) the source's headers.
	HeadersFromEnv map[string]string `yaml:"headers_from_env,omitempty"`
	// Body maps JSON body fields to argument names; absent, the arguments
	// not used by the URL form the body (query for GET, HEAD, DELETE).
	Body map[string]string `yaml:"body,omitempty"`
	// InputSchema and OutputSchema are JSON Schemas written in YAML.
	InputSchema  any `yaml:"input_schema,omitempty"`
	OutputSchema any `yaml:"output_schema,omitempty"`
	// MaxResponseBytes caps the response body; 0 means 1MiB.
	MaxResponseBytes ByteSize `yaml:"max_response_bytes,omitempty"`
	// Timeout bounds one request; 0 means the policy timeout, else 30s.
	Timeout Duration `yaml:"timeout,omitempty"`
	// Policy, when set, replaces the source's policy for this tool.
	Policy *Policy `yaml:"policy,omitempty"`
}

// Default returns the configuration used when nothing is set.
func Default() *Config {
	c := &Config{
		Listen:        DefaultListen,
		Limits:        Limits{Defaults: limits.Defaults(), Ceilings: limits.Ceilings()},
		ShutdownGrace: Duration(DefaultShutdownGrace),
	}
	defaultServing(c)
	c.Workers = Workers{Mode: "worker", Idle: 2, Max: 64, ExecutionsPerWorker: 1, RecycleAfter: 1000,
		IdleTimeout: Duration(DefaultIdleTimeout)}
	return c
}

// Workers configures the execution isolation (see docs/workers.md).
type Workers struct {
	// Mode is "worker" (executions run in a pool of worker processes with
	// OS memory and CPU limits; the default) or "inprocess" (in the server
	// process: faster to start, memory limits best effort, and no sandbox:
	// it needs InsecureInProcess).
	Mode string `yaml:"mode"`
	// InsecureInProcess acknowledges that with mode inprocess scripts run
	// inside ptcd itself, with its memory, files and network within reach
	// of any engine bug: only for scripts the operator trusts. ptcd refuses
	// mode inprocess without it, and warns at start with it.
	InsecureInProcess bool `yaml:"insecure_inprocess"`
	// Idle is the number of started workers kept waiting.
	Idle int `yaml:"idle"`
	// IdleTimeout is how long a worker beyond Idle may stay idle before it
	// is stopped: after a burst the pool shrinks back to Idle workers.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// Max bounds the worker processes alive at once.
	Max int `yaml:"max"`
	// ExecutionsPerWorker is the density knob: 1 is the strongest
	// isolation; more parks more executions per process, sharing its fate.
	ExecutionsPerWorker int `yaml:"executions_per_worker"`
	// RecycleAfter replaces a worker after this many executions.
	RecycleAfter int `yaml:"recycle_after"`
}

func (w Workers) validate() error {
	switch {
	case w.Mode != "worker" && w.Mode != "inprocess":
		return fmt.Errorf("config: workers.mode is %q: use worker or inprocess", w.Mode)
	case w.Idle < 0, w.Max < 1, w.ExecutionsPerWorker < 1, w.RecycleAfter < 1:
		return errors.New("config: workers: idle must be ≥ 0 and max, executions_per_worker and recycle_after ≥ 1")
	case w.IdleTimeout < 0:
		return errors.New("config: workers.idle_timeout is negative: use a duration such as \"30s\"")
	case w.Mode == "inprocess" && !w.InsecureInProcess:
		return errors.New("config: workers.mode is inprocess, which runs scripts inside ptcd itself: no process isolation, " +
			"no OS memory limit, and ptcd's own files, network and memory within reach of any engine bug — not a sandbox " +
			"for untrusted scripts. Use mode worker (the default), or, if every script is trusted, also set " +
			"workers.insecure_inprocess: true (PTC_WORKERS_INSECURE_INPROCESS=true, -workers.insecure-inprocess)")
	}
	return nil
}

// Parse decodes a YAML document over Default and validates the result.
// Unknown keys are errors that name the key and its line.
func Parse(data []byte) (*Config, error) {
	c := Default()
	if err := c.decode(data); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Config) decode(data []byte) error {
	if len(data) > MaxFileBytes {
		return fmt.Errorf("config is %d bytes, more than the %d allowed", len(data), MaxFileBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.Strict(), yaml.DisallowUnknownField())
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("config: %s", yaml.FormatError(err, false, true))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("config: the file holds more than one YAML document: keep one")
	}
	for i := range c.ToolSources {
		if c.ToolSources[i].Required == nil {
			yes := true
			c.ToolSources[i].Required = &yes
		}
	}
	return nil
}

// Print writes c as YAML. c holds no secret values (only the names of the
// variables that hold them), so the output is safe to share.
func (c *Config) Print(w io.Writer) error {
	b, err := yaml.MarshalWithOptions(c, yaml.Indent(2), yaml.IndentSequence(true))
	if err != nil {
		return fmt.Errorf("config: print: %w", err)
	}
	_, err = w.Write(b)
	return err
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports the first problem of c, naming the key.
func (c *Config) Validate() error {
	if err := c.Workers.validate(); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("config: listen %q is not host:port (e.g. \"127.0.0.1:7878\" or \":7878\")", c.Listen)
	}
	if c.ShutdownGrace < 0 {
		return errors.New("config: shutdown_grace is negative: use a duration such as \"15s\"")
	}
	if err := c.Policy().Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.validateServing(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i := range c.ToolSources {
		s := &c.ToolSources[i]
		where := fmt.Sprintf("tool_sources[%d]", i)
		if s.Name != "" {
			where += " (" + s.Name + ")"
		}
		if err := s.validate(); err != nil {
			return fmt.Errorf("config: %s: %w", where, err)
		}
		if seen[s.Name] {
			return fmt.Errorf("config: %s: name %q is used twice", where, s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

func (s *ToolSource) validate() error {
	if err := tools.ValidateName(s.Name); err != nil || strings.Contains(s.Name, ".") {
		return fmt.Errorf("name %q is invalid: use letters, digits, _ and - (no dots)", s.Name)
	}
	only := func(field string, set bool, types ...string) error {
		for _, t := range types {
			if s.Type == t {
				return nil
			}
		}
		if set {
			return fmt.Errorf("%s applies only to type %s", field, strings.Join(types, " or "))
		}
		return nil
	}
	switch s.Type {
	case TypeMCPStdio:
		if s.Command == "" {
			return errors.New("command is required for type mcp_stdio")
		}
	case TypeMCPHTTP:
		if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			return fmt.Errorf("url %q must start with http:// or https://", s.URL)
		}
	case TypeHTTP:
		if len(s.Tools) == 0 {
			return errors.New("tools is required for type http: list its endpoints")
		}
	case "":
		return errors.New("type is required: mcp_stdio, mcp_http or http")
	default:
		return fmt.Errorf("type %q is unknown: use mcp_stdio, mcp_http or http", s.Type)
	}
	for _, err := range []error{
		only("command", s.Command != "", TypeMCPStdio),
		only("args", len(s.Args) > 0, TypeMCPStdio),
		only("dir", s.Dir != "", TypeMCPStdio),
		only("env", len(s.Env) > 0, TypeMCPStdio),
		only("env_from_env", len(s.EnvFromEnv) > 0, TypeMCPStdio),
		only("url", s.URL != "", TypeMCPHTTP),
		only("headers_from_env", len(s.HeadersFromEnv) > 0, TypeMCPHTTP, TypeHTTP),
		only("allow", len(s.Allow) > 0, TypeMCPStdio, TypeMCPHTTP),
		only("deny", len(s.Deny) > 0, TypeMCPStdio, TypeMCPHTTP),
		only("connect_timeout", s.ConnectTimeout != 0, TypeMCPStdio, TypeMCPHTTP),
		only("tools", len(s.Tools) > 0, TypeHTTP),
	} {
		if err != nil {
			return err
		}
	}
	if err := checkEnvNames("env_from_env", s.EnvFromEnv); err != nil {
		return err
	}
	if err := checkEnvNames("headers_from_env", s.HeadersFromEnv); err != nil {
		return err
	}
	for k := range s.Env {
		if !envNameRE.MatchString(k) {
			return fmt.Errorf("env: %q is not a valid variable name", k)
		}
	}
	if s.ConnectTimeout < 0 {
		return errors.New("connect_timeout is negative")
	}
	if err := s.Policy.Config().Validate(); err != nil {
		return err
	}
	names := map[string]bool{}
	for i, t := range s.Tools {
		if t.Name == "" {
			return fmt.Errorf("tools[%d]: name is required", i)
		}
		if names[t.Name] {
			return fmt.Errorf("tools[%d]: name %q is used twice", i, t.Name)
		}
		names[t.Name] = true
		if err := checkEnvNames(fmt.Sprintf("tools[%d].headers_from_env", i), t.HeadersFromEnv); err != nil {
			return err
		}
		if t.Policy != nil {
			if err := t.Policy.Config().Validate(); err != nil {
				return fmt.Errorf("tools[%d]: %w", i, err)
			}
		}
		if _, err := schemaJSON(t.InputSchema); err != nil {
			return fmt.Errorf("tools[%d].input_schema: %w", i, err)
		}
		if _, err := schemaJSON(t.OutputSchema); err != nil {
			return fmt.Errorf("tools[%d].output_schema: %w", i, err)
		}
		if t.MaxResponseBytes < 0 || t.Timeout < 0 {
			return fmt.Errorf("tools[%d]: max_response_bytes and timeout must not be negative", i)
		}
	}
	return nil
}

// checkEnvNames checks that every value of m names an environment variable:
// a value that does not look like a name is probably a secret pasted into
// the file.
func checkEnvNames(key string, m map[string]string) error {
	for k, v := range m {
		if k == "" {
			return fmt.Errorf("%s: empty name", key)
		}
		if !envNameRE.MatchString(v) {
			return fmt.Errorf("%s.%s must name an environment variable (e.g. GITHUB_AUTH), not hold the value: secrets come only from the environment", key, k)
		}
	}
	return nil
}

// readFile reads the configuration file, bounded.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	return b, nil
}
