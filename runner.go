package ptc

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/internal/wire"
	"github.com/ptcrun/ptc/tools"
)

// Runner executes scripts in-process. It is safe for concurrent use.
type Runner struct {
	ex *executor.Executor
	dm *durable.Manager
}

// Durable configures the continuations of a Runner's resumable
// executions (Request.Resumable). The zero value signs them with a key
// made when the Runner starts: they resume only in that Runner, until it
// closes. docs/durable.md describes the token and its security.
type Durable struct {
	// Keys sign and encrypt continuations, by key id: SigningKey names the
	// one that signs new continuations, every key verifies (keep the old
	// key while its continuations may still be resumed). Each secret is at
	// least 32 random bytes. Runners (and ptcd servers) that share a key
	// resume each other's continuations.
	Keys       map[string][]byte
	SigningKey string
	// TTL is how long a continuation can be resumed (default 24h).
	TTL time.Duration
	// MaxTokenBytes bounds a continuation (default 256 KiB); a paused
	// state that does not fit is kept in the store (StateFile, RedisURL,
	// PostgresDSN),
	// or the execution ends with KindPauseLimit.
	MaxTokenBytes int
	// StateFile keeps used continuations and large paused states in one
	// file, across restarts of this process.
	StateFile string
	// RedisURL keeps them in Redis (redis://host:port/db), shared with
	// every runner and server that uses it.
	RedisURL string
	// PostgresDSN keeps them in PostgreSQL (a connection string:
	// key=value pairs or a postgres:// URL), shared alike; the store's
	// tables are created when the Runner starts (see docs/durable.md).
	PostgresDSN string
	// Parked bounds the paused executions kept in memory to resume
	// without a re-run (default 64; negative keeps none).
	Parked int
	// OutcomeRetention is how long the outcome of a Resume is kept for a
	// retry with the same continuation and answers (default 10m; never
	// beyond the continuation's expiry). Without a store
	// outcomes are kept in memory, 64 MiB in all.
	OutcomeRetention time.Duration
}

// manager builds the continuation manager of a Durable.
func (d Durable) manager() (*durable.Manager, error) {
	cfg := durable.Config{TTL: d.TTL, MaxTokenBytes: d.MaxTokenBytes, OutcomeRetention: d.OutcomeRetention}
	if len(d.Keys) > 0 {
		cfg.Keys = append(cfg.Keys, durable.Key{ID: d.SigningKey, Secret: d.Keys[d.SigningKey]})
		ids := make([]string, 0, len(d.Keys))
		for id := range d.Keys {
			if id != d.SigningKey {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		for _, id := range ids {
			cfg.Keys = append(cfg.Keys, durable.Key{ID: id, Secret: d.Keys[id]})
		}
	}
	var err error
	switch {
	case d.StateFile != "":
		cfg.Store, err = durable.OpenFile(d.StateFile)
	case d.RedisURL != "":
		cfg.Store, err = durable.OpenRedis(context.Background(), d.RedisURL, "")
	case d.PostgresDSN != "":
		cfg.Store, err = durable.OpenPostgres(context.Background(), d.PostgresDSN, durable.PostgresOptions{})
	}
	if err != nil {
		return nil, err
	}
	m, err := durable.New(cfg)
	if err != nil && cfg.Store != nil {
		_ = cfg.Store.Close()
	}
	return m, err
}

// Isolation says where a Runner runs scripts. The zero value runs every
// language in the calling process: the fastest, for embedding trusted
// workloads, where JavaScript's memory is guarded only against single
// huge allocations and CPU time is the VM's running time (WebAssembly
// and Python, under wazero's own limits). With WorkerProcesses, every
// language runs in the worker processes (Python too, unless
// PythonInProcess). Once a Runner has run Python,
// it keeps two interpreters started ahead of the next Python scripts,
// in the workers or in this process (about 10 MiB each).
type Isolation struct {
	// WorkerProcesses runs each script in a pre-started worker process
	// (this binary, re-executed) with an OS memory limit, a heap watchdog,
	// the OS CPU clock and kill at the deadline: what untrusted scripts
	// need. The binary must call RunWorker first thing in main. The fields
	// below configure the workers; a zero field takes its default.
	WorkerProcesses bool
	// Idle is the number of started workers kept waiting (default 2;
	// negative keeps none).
	Idle int
	// Max bounds the worker processes alive at once (default 64).
	Max int
	// IdleTimeout is how long a worker beyond Idle may stay idle before it
	// is stopped, so the pool shrinks back after a burst (default 30 s).
	IdleTimeout time.Duration
	// ExecutionsPerWorker is the density knob: 1 (the default) is the
	// strongest isolation; more parks more executions per process, sharing
	// its memory and its fate.
	ExecutionsPerWorker int
	// RecycleAfter replaces a worker after this many executions (default
	// 1000).
	RecycleAfter int
	// Executable is the binary started as a worker (default this one); it
	// must call RunWorker first thing in main.
	Executable string
	// PythonInProcess runs Python in this process even with
	// WorkerProcesses: CPython inside wazero, under the WebAssembly
	// engine's limits and loop checks but outside the worker sandbox
	// (ptcd's python.in_supervisor). The interpreter's compiled code is
	// then kept in the user's cache, which a worker, locked off the
	// filesystem, cannot use: a short-lived program that runs one Python
	// script otherwise compiles the interpreter (seconds) every time.
	PythonInProcess bool
	// Logger receives what an operator must see about the workers: a
	// worker's death with what it wrote on stderr, a failed start. Nil
	// means slog.Default().
	Logger *slog.Logger
}

// WASM configures the WebAssembly engine (created on the first WASM
// request); a zero field takes its default.
type WASM struct {
	// CacheDir keeps compiled modules on disk as well, so that a restarted
	// runner loads a module it compiled before (about 0.1 s instead of 2 s
	// for a Go guest).
	CacheDir string
	// MaxModules bounds the compiled modules kept in memory (default 64).
	MaxModules int
	// RealClock gives guests the real wall and monotonic clocks and real
	// sleeps; by default they see a virtual clock and sleeps return at
	// once.
	RealClock bool
	// RealRandom gives guests random bytes from crypto/rand; by default
	// the sequence is the same in every execution.
	RealRandom bool
}

// RunWorker lets this binary host ptc worker processes: when the process
// was started as a worker, RunWorker runs the worker and exits; otherwise
// it returns at once. Call it first thing in main of a binary that uses
// WithIsolation(Isolation{WorkerProcesses: true}), and in TestMain of its
// tests; a worker whose program does not, exits with a message when it
// reaches NewRunner, instead of starting workers of its own:
//
//	func main() {
//		ptc.RunWorker()
//		…
//	}
func RunWorker() {
	if code, ok := worker.Main(); ok {
		os.Exit(code)
	}
}

// NewRunner returns a Runner with the JavaScript, TypeScript and
// WebAssembly engines and the options applied. Call Close when done.
func NewRunner(opts ...Option) (*Runner, error) {
	var o options
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt.apply(&o); err != nil {
			return nil, err
		}
	}
	cfg, err := o.executorConfig()
	if err != nil {
		return nil, err
	}
	d := o.durableOrZero()
	dm, err := d.manager()
	if err != nil {
		return nil, fmt.Errorf("ptc: %w", err)
	}
	cfg.Durable, cfg.Outcomes = dm, wire.Outcomes
	cfg.Parked = executor.ParkedConfig{Max: d.Parked}
	ex, err := executor.New(cfg)
	if err != nil {
		_ = dm.Close()
		return nil, fmt.Errorf("ptc: %w", err)
	}
	return &Runner{ex: ex, dm: dm}, nil
}

// Close releases the runner's engines (worker processes, the WebAssembly
// runtime and its compiled modules) and its state store; paused
// executions kept in memory are dropped (their continuations still
// resume them, in a Runner with the same keys). Executions must have
// finished.
func (r *Runner) Close() error {
	err := r.ex.Close()
	if derr := r.dm.Close(); err == nil {
		err = derr
	}
	return err
}

// Register adds a server tool.
func (r *Runner) Register(t tools.Tool) error { return r.ex.Registry().Register(t) }

// Tools returns the definitions of the server tools, sorted by name.
func (r *Runner) Tools() []tools.Definition { return r.ex.Registry().Definitions() }

// ListTools describes the server tools as the server's ListTools does: all,
// the named ones or the most relevant to a query, with TypeScript
// declarations when asked, the model-facing prompt and a token estimate.
func (r *Runner) ListTools(_ context.Context, q ToolQuery) (*ToolList, error) {
	l, err := r.ex.ListTools(toolQueryCore(q), nil, limits.Limits{})
	if err != nil {
		return nil, errorOf(err)
	}
	return toolListOf(l), nil
}

// Execute checks a request and runs it. A request that cannot run at all
// returns an *Error with a Code; a script that fails returns a Result
// whose Error is set (with a Kind).
func (r *Runner) Execute(ctx context.Context, req Request) (*Result, error) {
	res, err := r.ex.Execute(ctx, requestCore(req), limits.Limits{})
	if err != nil {
		return nil, errorOf(err)
	}
	return resultOf(res), nil
}

// LoadModule compiles a WebAssembly module (or finds it in the cache) and
// returns its hex SHA-256, by which requests (Request.ModuleSHA256) and
// resumes find it: a paused WebAssembly execution's continuation names its
// module without carrying it, so a Runner that resumes it must hold it.
func (r *Runner) LoadModule(ctx context.Context, module []byte) (string, error) {
	h, ferr := r.ex.LoadModule(ctx, module)
	if ferr != nil {
		return "", errorOf(ferr)
	}
	return h, nil
}

// Resume goes on with a paused execution (Result.RequiresAction): the
// continuation it returned and one answer per pending action. It returns
// the execution's next state: paused again, or ended. Nothing runs when it
// returns an *Error: InvalidArgument for a malformed or altered
// continuation (or one signed with a key this Runner lacks) and for
// answers that do not fit the pending actions (the message names the
// call); FailedPrecondition for an expired continuation or one used
// already with other answers (each resumes once).
//
// Retrying is safe: the execution goes on even when ctx ends first (ctx
// bounds only the wait; the error is Canceled or DeadlineExceeded), and a
// Resume with the same continuation and the same answers returns its
// outcome — the same next state, with the same new continuation — for
// Durable.OutcomeRetention, without running anything again (it waits for
// the execution when it still runs). Past the retention it is
// FailedPrecondition (reason CONTINUATION_USED).
func (r *Runner) Resume(ctx context.Context, continuation string, answers ...Answer) (*Result, error) {
	p, ferr := r.ex.PrepareResume(ctx, executor.Resume{Continuation: continuation, Answers: answersCore(answers)})
	if ferr != nil {
		return nil, errorOf(ferr)
	}
	res, ferr := r.ex.Continue(ctx, p)
	if ferr != nil {
		return nil, errorOf(ferr)
	}
	return resultOf(res), nil
}
