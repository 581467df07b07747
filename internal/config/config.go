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
// auth and tenants, admission, metrics, tls, grpc, tracing and mcp (see
// docs/operations.md and docs/mcp.md), and the workers section.
//
// Package config is data and its validation only: it builds no running
// object (internal/service turns a validated Config into ptcd's running
// service). It may import internal/limits, tools and tools/policy, and
// internal/auth and internal/admission for their validation; never the
// engines, the bridge, the executor, the server, the continuation store,
// the tool sources or tracing (internal/layering checks it). Only
// internal/service and the commands import it.
package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/ptcrun/ptc/internal/limits"
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
	// Tracing exports OpenTelemetry spans over OTLP; off by default.
	Tracing Tracing `yaml:"tracing"`
	// MCP is the Model Context Protocol endpoint (off unless mcp.listen is
	// set).
	MCP MCP `yaml:"mcp"`

	// Workers configures the worker processes that run JavaScript and
	// TypeScript executions.
	Workers Workers `yaml:"workers"`

	// WASM configures the WebAssembly engine's compile limits and module
	// bounds.
	WASM WASM `yaml:"wasm"`

	// Python configures the Python engine's interpreter.
	Python Python `yaml:"python"`

	// Durable configures resumable executions and their continuations.
	Durable Durable `yaml:"durable"`
	// Idempotency keeps Execute and Session outcomes by execution_id.
	Idempotency Idempotency `yaml:"idempotency"`
	// Approvals lists the server tools whose calls need approval.
	Approvals Approvals `yaml:"approvals,omitempty"`
}

// Limits holds the limits section. Each side is a limits.Limits, written
// field by field as the limits table names them (durations such as "30s",
// byte sizes such as "64MiB").
type Limits struct {
	// Defaults apply to a request that leaves a limit unset.
	Defaults LimitValues `yaml:"defaults"`
	// Ceilings are the most a request may ask for.
	Ceilings LimitValues `yaml:"ceilings"`
}

// Policy returns the limits policy of the configuration.
func (c *Config) Policy() limits.Policy {
	return limits.Policy{Defaults: limits.Limits(c.Limits.Defaults), Ceilings: limits.Limits(c.Limits.Ceilings)}
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
	// Approval is the approval policy of an MCP server's tools, from
	// their annotations: none (the default), all, not_read_only (every
	// tool not marked readOnlyHint) or destructive (every tool not marked
	// read-only whose destructiveHint is not false).
	Approval string `yaml:"approval,omitempty"`

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
		Limits:        Limits{Defaults: LimitValues(limits.Defaults()), Ceilings: LimitValues(limits.Ceilings())},
		ShutdownGrace: Duration(DefaultShutdownGrace),
	}
	defaultServing(c)
	defaultTracing(c)
	c.Workers = Workers{Mode: "worker", Idle: 2, Max: 64, ExecutionsPerWorker: 1, RecycleAfter: 1000,
		IdleTimeout: Duration(DefaultIdleTimeout)}
	c.Durable = defaultDurable()
	c.Idempotency = defaultIdempotency()
	c.WASM = defaultWASM()
	c.Python.Warm = DefaultPythonWarm
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

// Parse decodes a YAML document over Default and validates the result.
// Errors are *Error values that name the key and, for the document, its
// line and column.
func Parse(data []byte) (*Config, error) {
	c := Default()
	doc, err := c.decode("", data)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		locateIn(err, "", doc, nil)
		return nil, err
	}
	return c, nil
}

// decode decodes a YAML document over c and returns its root node. file
// names the document in errors.
func (c *Config) decode(file string, data []byte) (ast.Node, error) {
	if len(data) > MaxFileBytes {
		return nil, &Error{File: file, Msg: fmt.Sprintf("the file is %d bytes, more than the %d allowed", len(data), MaxFileBytes)}
	}
	// Duplicate keys are found below, with their path.
	f, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, decodeError(file, nil, err)
	}
	var doc ast.Node
	for _, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if doc != nil {
			return nil, &Error{File: file, Line: d.Body.GetToken().Position.Line, Column: 1,
				Msg: "a second YAML document starts here: keep one document in the file"}
		}
		doc = d.Body
	}
	if doc == nil {
		return nil, nil
	}
	if err := duplicateKey(file, doc); err != nil {
		return doc, err
	}
	if err := yaml.NodeToValue(doc, c, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		return doc, decodeError(file, doc, err)
	}
	for i := range c.ToolSources {
		if c.ToolSources[i].Required == nil {
			yes := true
			c.ToolSources[i].Required = &yes
		}
	}
	return doc, nil
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

// readFile reads the configuration file, bounded.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Msg: pathErrorText(err)}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &Error{File: path, Msg: pathErrorText(err)}
	}
	return b, nil
}

// pathErrorText is an I/O error without the path, which the message
// already names.
func pathErrorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
