package worker

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
)

// Pool is a runtime.Engine for JavaScript and TypeScript that runs each
// execution in a pool of pre-started worker processes (or in-process, see
// ModeInProcess). It is safe for concurrent use.
type Pool struct {
	cfg     Config
	exec    *executor // in-process mode only
	modules *modules  // WebAssembly modules to send to workers
	// compiler compiles requests' modules in workers (compile.go).
	compiler *compiler
	// pyCompiles bounds the workers compiling the Python interpreter at
	// once (python.go): one slot per token.
	pyCompiles chan struct{}
	log        *slog.Logger

	mu       sync.Mutex
	procs    map[*proc]struct{}
	spawning int
	closed   bool
	changed  chan struct{}
	netnsErr error
	facts    *Facts
	// shrink, when not nil, is armed to stop workers idle beyond
	// IdleTimeout (see shrinkLocked).
	shrink *time.Timer
	// breachSeen, when set (benchmarks), is called as a breach report
	// arrives.
	breachSeen func()

	// wg tracks the reader goroutine of every worker and the spawns;
	// Close waits for it.
	wg sync.WaitGroup
	// starter starts the worker processes (worker mode); Close stops it
	// after wg.
	starter *starter

	// counts are kept by the workers' lifecycle transitions
	// (lifecycle.go).
	counts lifeCounts
}

// NewPool returns a Pool and, in worker mode, starts its warm workers. The
// first worker is started synchronously so that a binary that cannot run
// workers fails here, with the reason.
//
// In a process started as a worker whose program did not call Main first
// (it ran the embedding program's main instead), NewPool does not return:
// it writes what to fix on stderr and exits the process with status 3, as
// a worker never starts workers.
func NewPool(cfg Config) (*Pool, error) {
	refuseInWorker()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Pool{cfg: cfg, procs: map[*proc]struct{}{}, changed: make(chan struct{}), log: cfg.Logger, modules: &modules{max: cfg.MaxModuleBytesKept},
		compiler: newCompiler(cfg.WASM), pyCompiles: make(chan struct{}, pythonCompiles)}
	if cfg.Mode == ModeInProcess {
		p.exec = newExecutor(cfg.ProgramCache)
		return p, nil
	}
	p.starter = newStarter()
	w, err := p.spawn()
	if err != nil {
		p.starter.stop()
		return nil, err
	}
	p.mu.Lock()
	p.addLocked(w)
	p.replenishLocked()
	p.mu.Unlock()
	return p, nil
}

// Run executes a JavaScript, TypeScript or (in ModeWorker) WebAssembly
// job. It never panics; every failure is a classified error in the
// Outcome.
func (p *Pool) Run(ctx context.Context, job *ptcruntime.Job) *ptcruntime.Outcome {
	if isWASM(job) && p.cfg.Mode == ModeInProcess {
		return &ptcruntime.Outcome{Err: fault.New(fault.KindInternal, "the in-process pool runs JavaScript; run WebAssembly on the wasm engine")}
	}
	if job.Tools == nil {
		j := *job
		j.Tools = bridge.New(bridge.Config{ExecutionID: job.ExecutionID})
		job = &j
	}
	if p.cfg.Mode == ModeInProcess {
		return p.exec.run(ctx, job, inProcessBaseline(job.Limits.MemoryBytes), true, nil, nil, nil)
	}
	if isWASM(job) {
		return p.runWASM(ctx, job)
	}
	return p.runWorker(ctx, job, nil)
}

// Close stops every worker. Executions still running fail with CANCELLED.
// Close waits for the workers' goroutines to end.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.shrink != nil {
		p.shrink.Stop()
	}
	procs := make([]*proc, 0, len(p.procs))
	for w := range p.procs {
		procs = append(procs, w)
	}
	p.signalLocked()
	p.mu.Unlock()
	for _, w := range procs {
		w.killAll(fault.KindCancelled, reasonPoolClosed)
	}
	p.wg.Wait()
	if p.starter != nil {
		p.starter.stop()
	}
	return nil
}

// Stats counts worker processes over the life of a pool. The counts are
// read from the workers' lifecycles: a worker the pool ends itself
// (Killed, Recycled, Shrunk, or the pool closing) is never counted in Died.
type Stats struct {
	// Alive is the number of worker processes in the pool that are ready,
	// running executions or draining: not those still starting, nor those
	// the pool is stopping or that have died.
	Alive int
	// Started, Died, Recycled and Killed count workers started, ended
	// without the pool ending them (a crash, a kill from outside, a
	// failed start-up handshake), retired after an outcome that leaves
	// them unclean (a breach, an internal error) or their quota, and
	// killed at a deadline, a cancel or a limit their execution did not
	// stop at.
	Started, Died, Recycled, Killed int64
	// Shrunk counts idle workers stopped after IdleTimeout.
	Shrunk int64
	// ModuleCompiles counts the modules CompileModule compiled in a worker
	// process, and ModuleHits the calls that found their module checked
	// before or being compiled for another request.
	ModuleCompiles, ModuleHits int64
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	alive := 0
	for w := range p.procs {
		if s := w.life.current(); s != stateStarting && !s.final() {
			alive++
		}
	}
	p.mu.Unlock()
	c := &p.counts
	return Stats{Alive: alive, Started: c.started.Load(), Died: c.died.Load(),
		Recycled: c.recycled.Load(), Killed: c.killed.Load(), Shrunk: c.shrunk.Load(),
		ModuleCompiles: p.compiler.compiles.Load(), ModuleHits: p.compiler.hits.Load()}
}

// inProcessBaseline returns the live heap an in-process execution is
// measured against. The live heap of the last GC may be stale (data of an
// earlier execution that has died since); when it is large — above four
// times the execution's memory limit — a collection refreshes it first.
func inProcessBaseline(memBytes int64) int64 {
	live := liveHeap()
	if memBytes > 0 && live > 4*memBytes {
		runtime.GC()
		live = liveHeap()
	}
	return live
}
