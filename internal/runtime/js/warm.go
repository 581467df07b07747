package js

import (
	"context"
	"fmt"
	"sync"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/runtime"
)

// Warm makes a fresh JavaScript runtime before the job that will run in
// it, and returns the function that runs that job (RunSource's
// signature): everything that does not depend on the job is done now —
// the runtime, the guards every script gets, which read the job's
// limits when called, and the guard groups the latest program run on the
// Engine needed (aheadGroups) — so that a worker can make it between
// executions, off the path of the next one. The guards a program needs
// beyond those (lazy.go) are still installed when its job is attached. It
// is still a fresh runtime per execution: the returned function runs one
// job in it; called again, it makes another runtime then, as RunSource
// does.
func (e *Engine) Warm() (run func(context.Context, *runtime.Job, Source) *runtime.Outcome, err error) {
	x, err := e.prepare(e.aheadGroups())
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	return func(ctx context.Context, job *runtime.Job, src Source) *runtime.Outcome {
		c := e.compile(src)
		if c.syntaxEr != nil {
			se := *c.syntaxEr
			return &runtime.Outcome{Err: &se}
		}
		e.noteGroups(c.groups)
		mu.Lock()
		w := x
		x = nil
		mu.Unlock()
		if w == nil {
			w = newExec(e)
		}
		w.attach(ctx, job, c, src.MapPosition)
		return w.run()
	}, nil
}

// noteGroups records the guard groups of the program about to run: the
// runtimes made ahead after it get them (aheadGroups).
func (e *Engine) noteGroups(g group) { e.warmGroups.Store(uint32(g)) }

// aheadGroups returns the guard groups a runtime made ahead gets: those
// of the latest program run on the Engine — executions of one program
// tend to follow each other, and a program that needs no group (`return
// {ok: 1}`) then instantiates none of the prototypes' methods — or, before
// any, groupSizes (New). More guards than a program needs are harmless;
// fewer are installed when its job is attached.
func (e *Engine) aheadGroups() group { return group(e.warmGroups.Load()) }

// prepare makes an execution's runtime ahead of its job, with the guard
// groups g installed: an execution that has run nothing.
func (e *Engine) prepare(g group) (x *exec, err error) {
	defer func() {
		if r := recover(); r != nil {
			x, err = nil, fmt.Errorf("js: preparing a runtime panicked: %v", r)
		}
	}()
	x = newExec(e)
	x.newRuntime()
	x.aheadOfMain()
	// The tools and console globals are defined after input, as a
	// runtime made at the start of its job defines them (setup).
	x.install(g &^ (groupTools | groupConsole))
	return x, nil
}

// WithWarmRuntimes keeps up to n runtimes made ahead of the executions
// that will use them (as worker processes do, Warm), so that an
// execution does not wait for its runtime to be made: RunSource takes
// one when there is one and a goroutine makes its replacement. Each is
// fresh — made for one execution, never one that ran a script — with
// the guard groups of the latest program run installed ahead (more
// guards than a program needs are harmless; those it needs beyond them
// are installed when its job is attached). n ≤ 0 keeps none (the
// default): every execution makes its runtime when it starts.
func WithWarmRuntimes(n int) Option {
	return func(e *Engine) {
		if n > 0 {
			e.warm = make(chan *exec, n)
		}
	}
}

// takeWarm returns a runtime made ahead, or nil when none is ready, and
// has the pool refilled with runtimes for programs that need the groups
// g.
func (e *Engine) takeWarm(g group) *exec {
	e.noteGroups(g)
	if e.warm == nil {
		return nil
	}
	var x *exec
	select {
	case x = <-e.warm:
	default:
	}
	e.refill()
	return x
}

// refill starts the goroutine that fills the pool of warm runtimes,
// unless it runs already. The goroutine belongs to the Engine; it ends
// when the pool is full (or a runtime cannot be made), so an idle Engine
// runs nothing. A take that comes as it ends may leave the pool one short
// until the next take.
func (e *Engine) refill() {
	if !e.warming.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer e.warming.Store(false)
		for len(e.warm) < cap(e.warm) {
			x, err := e.prepare(e.aheadGroups())
			if err != nil {
				return
			}
			select {
			case e.warm <- x:
			default:
				return
			}
		}
	}()
}

// aheadOfMain does ahead what every script's start does the first time:
// goja makes the Promise constructor and prototype when the first async
// function is called (the script is one), and the AsyncFunction prototype
// when the first is made. The function made for it is ptc's own and is
// dropped: nothing of a script runs. (AsyncFunction, reachable from that
// prototype, is guarded with groupBase.)
func (x *exec) aheadOfMain() {
	x.vm.Get("Promise")
	_, _ = x.vm.RunProgram(asyncProgram)
}

// asyncProgram evaluates to an async function.
var asyncProgram = goja.MustCompile("async.js", `(async function () {})`, true)
