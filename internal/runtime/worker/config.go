package worker

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
)

// defaultIdleTimeout is Config.IdleTimeout's default.
const defaultIdleTimeout = 30 * time.Second

// Mode selects where a Pool runs executions.
type Mode int

const (
	// ModeWorker runs each execution in a worker process with a hard OS
	// memory limit; a worker that breaks a limit or dies is replaced. It
	// is the default.
	ModeWorker Mode = iota
	// ModeInProcess runs executions in the calling process with the same
	// engine guards, CPU clock and heap watchdog. The memory limit is best effort:
	// the heap is shared with the host program, and an allocation the
	// guards do not foresee can exhaust the host's memory. Use it for
	// embedding and trusted tests.
	ModeInProcess
)

// String returns "worker" or "inprocess".
func (m Mode) String() string {
	if m == ModeInProcess {
		return "inprocess"
	}
	return "worker"
}

// Config configures a Pool. The zero value is a useful default: worker
// mode, two warm workers, one execution per worker.
type Config struct {
	// Mode selects worker processes (default) or in-process execution.
	Mode Mode
	// Workers is the number of idle workers kept started, so that an
	// execution never waits for a process to start. Default 2; a negative
	// value keeps none (workers start on demand).
	Workers int
	// MaxWorkers bounds the worker processes alive at once; executions
	// beyond MaxWorkers × ExecutionsPerWorker wait. Default 64.
	MaxWorkers int
	// ExecutionsPerWorker is the density knob: the most executions one
	// worker process runs at once. 1 (the default) is the strongest
	// isolation: a breach or crash takes only its own execution with it.
	// Higher values park more executions per process (less memory per
	// parked execution) but share one memory budget and one fate.
	ExecutionsPerWorker int
	// IdleTimeout is how long a worker beyond the Workers kept warm may stay
	// idle before it is stopped: after a burst the pool shrinks back to
	// Workers idle workers. Default 30 s.
	IdleTimeout time.Duration
	// RecycleAfter replaces a worker after this many executions. Default 1000.
	RecycleAfter int
	// RecycleRSSBytes replaces a worker whose resident memory grew by more
	// than this since it started. Default 256 MiB.
	RecycleRSSBytes int64
	// MaxExecutionMemoryBytes is the largest memory limit an execution
	// may have (the ceiling of the operator's policy). Default
	// limits.Ceilings().MemoryBytes.
	MaxExecutionMemoryBytes int64
	// WorkerMemoryBytes is the hard RLIMIT_DATA of each worker process.
	// Default: ExecutionsPerWorker × 2 × MaxExecutionMemoryBytes + 512 MiB
	// (one allocation may overshoot the heap watchdog by its own size).
	WorkerMemoryBytes int64
	// KillGrace is how long after its deadline (or after a cancel) an
	// execution's worker is killed when the script does not stop: a
	// non-interruptible built-in (a huge sort, JSON.parse of a huge
	// string) cannot be interrupted any other way. Default 1 s.
	KillGrace time.Duration
	// breachGrace overrides defaultBreachGrace (tests on a loaded machine).
	breachGrace time.Duration
	// StartTimeout bounds the start-up handshake of a worker. Default 10 s.
	StartTimeout time.Duration
	// Executable is the binary started in worker mode; default
	// os.Executable(). It must call Main at the top of main (ptc.RunWorker
	// does).
	Executable string
	// NoNetworkNamespace disables the private network namespace of
	// workers (used only where the process may create one).
	NoNetworkNamespace bool
	// ProgramCache is the number of compiled programs each worker (or the
	// in-process executor) keeps. Default 64.
	ProgramCache int
	// MaxFrameBytes bounds one frame read from a worker. Default: the
	// largest tool result (bridge.MaxResultBytes) plus 1 MiB.
	MaxFrameBytes int
	// WASM configures the WebAssembly engine of each worker (in
	// ModeWorker, a Pool runs WebAssembly jobs too). Guests there run
	// without per-loop checks and are killed at their deadline; CacheDir,
	// Interpreter and NoLoopChecks are not used (workers compile natively,
	// in memory, without loop checks), and each worker keeps at most 8
	// compiled modules. Its Bounds (and MaxModuleBytes) are also what
	// CompileModule checks a request's module against.
	WASM wasm.Config
	// MaxModuleBytesKept bounds the bytes of the WebAssembly modules the
	// supervisor keeps to send to workers that have not compiled them.
	// Default 256 MiB.
	MaxModuleBytesKept int64
	// Logger receives what an operator must see about workers: a worker's
	// own output on stderr (Go's fatal errors, signal dumps) and deaths the
	// pool did not cause, with the ids of the executions the worker was
	// running. Default slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Workers == 0 {
		c.Workers = 2
	}
	if c.Workers < 0 {
		c.Workers = 0
	}
	if c.MaxWorkers <= 0 {
		c.MaxWorkers = 64
	}
	if c.Workers > c.MaxWorkers {
		c.Workers = c.MaxWorkers
	}
	if c.ExecutionsPerWorker <= 0 {
		c.ExecutionsPerWorker = 1
	}
	if c.RecycleAfter <= 0 {
		c.RecycleAfter = 1000
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = defaultIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RecycleRSSBytes <= 0 {
		c.RecycleRSSBytes = 256 << 20
	}
	if c.MaxExecutionMemoryBytes <= 0 {
		c.MaxExecutionMemoryBytes = limits.Ceilings().MemoryBytes
	}
	if c.WorkerMemoryBytes <= 0 {
		c.WorkerMemoryBytes = int64(c.ExecutionsPerWorker)*2*c.MaxExecutionMemoryBytes + 512<<20
	}
	if c.KillGrace <= 0 {
		c.KillGrace = time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.ProgramCache <= 0 {
		c.ProgramCache = defaultProgramCache
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = defaultMaxFrameBytes
	}
	if c.MaxModuleBytesKept <= 0 {
		c.MaxModuleBytesKept = 256 << 20
	}
	if c.Mode == ModeWorker && c.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("worker: cannot find the executable to start workers from (%v); set Config.Executable", err)
		}
		c.Executable = exe
	}
	if c.Mode != ModeWorker && c.Mode != ModeInProcess {
		return c, fmt.Errorf("worker: unknown mode %d; use ModeWorker or ModeInProcess", int(c.Mode))
	}
	return c, nil
}

// breachGraceOrDefault is how long an execution that broke a limit has to
// stop before its worker is killed (see defaultBreachGrace).
func (c *Config) breachGraceOrDefault() time.Duration {
	if c.breachGrace > 0 {
		return c.breachGrace
	}
	return defaultBreachGrace
}
