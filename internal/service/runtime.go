package service

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/idem"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/internal/wire"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// Options are what a front end adds to the configuration when it
// assembles a Runtime or a Service. The zero value is ptcd's.
type Options struct {
	// Logger receives the log records; nil discards them.
	Logger *slog.Logger
	// LookupEnv reads the environment variables the file names (secrets,
	// headers, the Redis URL); nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// InProcess runs scripts in this process whatever the workers section
	// says (`ptc mcp --inprocess`: trusted scripts only).
	InProcess bool
	// NoContinuations builds no continuation manager and opens no state
	// store: for a front end that never pauses an execution (`ptc mcp`
	// over stdio, which must not take the store's lock from a running
	// ptcd).
	NoContinuations bool
	// onPark is told each execution parked in memory (resume forwarding;
	// set by New).
	onPark func(context.Context, string, time.Time)
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	return o
}

// Runtime is the half of the service that runs scripts: the tool registry
// fed by the demo tools and the tool sources, the continuation manager,
// the executor (engines and worker pool) and the request server over it.
// `ptc mcp --config` serves a Runtime over stdio; a Service serves one
// over gRPC and HTTP. Close stops it.
type Runtime struct {
	// Registry holds the server tools; the tool sources keep it current.
	Registry *tools.Registry
	// Executor runs the scripts.
	Executor *executor.Executor
	// Server answers requests in the request model (gRPC, MCP).
	Server *server.Server

	cfg     *config.Config
	sources []Source
	durable *durable.Manager
	log     *slog.Logger

	mu      sync.Mutex // guards changed
	changed []func()
}

// NewRuntime assembles a Runtime from a validated configuration: the
// tool sources are started, the continuation store opened, then the
// executor and its worker pool. On an error what was started is stopped
// again.
func NewRuntime(ctx context.Context, c *config.Config, o Options) (*Runtime, error) {
	return newRuntime(ctx, c, o.withDefaults(), telemetry.Tracing{}, nil)
}

// newRuntime is NewRuntime with ptcd's tracing and server options.
func newRuntime(ctx context.Context, c *config.Config, o Options, tr telemetry.Tracing, srvOpts []server.Option) (rt *Runtime, err error) {
	r := &Runtime{Registry: tools.NewRegistry(), cfg: c, log: o.Logger}
	defer func() {
		if err != nil {
			_ = r.Close()
		}
	}()
	if c.DemoTools {
		if err := r.Registry.Register(demo.Tools()...); err != nil {
			return nil, err
		}
	}
	if r.sources, err = startSources(ctx, c, o.LookupEnv, o.Logger, tr); err != nil {
		return nil, err
	}
	for _, s := range r.sources {
		if err := r.Registry.SetGroup(s.Name(), s.Tools()); err != nil {
			return nil, fmt.Errorf("tool source %s: %w", s.Name(), err)
		}
		s.OnChange(func() { r.sourceChanged(s) })
	}
	ecfg := executor.Config{Registry: r.Registry, Policy: c.Policy(), Tracing: tr, WASM: wasmConfig(c), Python: pythonConfig(c),
		Approve: c.ApprovalRule(), Parked: parkedConfig(c), OnPark: o.onPark}
	if !o.InProcess {
		w := WorkerConfig(c)
		w.Logger = o.Logger
		ecfg.Workers = &w
	}
	if !o.NoContinuations {
		if r.durable, err = durableManager(ctx, c, o.LookupEnv); err != nil {
			return nil, fmt.Errorf("durable: %w", err)
		}
		ecfg.Durable, ecfg.Outcomes = r.durable, wire.Outcomes
	}
	if r.Executor, err = executor.New(ecfg); err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	idc := c.Idempotency
	r.Server = server.New(r.Executor, append([]server.Option{server.WithLogger(o.Logger),
		server.WithIdempotency(idem.Config{Retention: time.Duration(idc.Retention), MaxEntries: idc.MaxEntries, MaxBytes: int64(idc.MaxBytes), Linger: time.Duration(idc.Linger)})},
		srvOpts...)...)
	return r, nil
}

// sourceChanged takes a source's new tools and tells the listeners.
func (r *Runtime) sourceChanged(s Source) {
	if err := r.Registry.SetGroup(s.Name(), s.Tools()); err != nil {
		r.log.Error("tool source changed but its tools were refused", "source", s.Name(), "err", err)
		return
	}
	r.log.Info("tool source changed", "source", s.Name(), "tools", len(s.Tools()))
	r.mu.Lock()
	fns := append([]func(){}, r.changed...)
	r.mu.Unlock()
	for _, f := range fns {
		f()
	}
}

// OnToolsChange registers f, called after a tool source's tools changed
// and the registry took them.
func (r *Runtime) OnToolsChange(f func()) {
	r.mu.Lock()
	r.changed = append(r.changed, f)
	r.mu.Unlock()
}

// Sources returns the started tool sources.
func (r *Runtime) Sources() []Source { return r.sources }

// EphemeralKeys reports that continuations are signed with a key made at
// start (no durable.keys): they cannot be resumed after a restart or on
// another replica.
func (r *Runtime) EphemeralKeys() bool { return r.durable != nil && r.durable.Ephemeral() }

// Ready reports the first required tool source that is down.
func (r *Runtime) Ready() error { return sourcesReady(r.cfg, r.sources) }

// sourcesReady reports the first required tool source that is down.
func sourcesReady(c *config.Config, sources []Source) error {
	required := map[string]bool{}
	for i := range c.ToolSources {
		required[c.ToolSources[i].Name] = c.ToolSources[i].IsRequired()
	}
	for _, s := range sources {
		a, ok := s.(interface{ Available() bool })
		if ok && required[s.Name()] && !a.Available() {
			return fmt.Errorf("required tool source %s is unavailable", s.Name())
		}
	}
	return nil
}

// Close stops the Runtime in the reverse order of its start: the
// executor (engines, worker pool), the continuation store, the tool
// sources. Executions must have ended.
func (r *Runtime) Close() error {
	var err error
	if r.Executor != nil {
		err = r.Executor.Close()
		r.Executor = nil
	}
	if r.durable != nil {
		if derr := r.durable.Close(); err == nil {
			err = derr
		}
		r.durable = nil
	}
	for i := len(r.sources) - 1; i >= 0; i-- {
		_ = r.sources[i].Close()
	}
	r.sources = nil
	return err
}
