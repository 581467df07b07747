package worker

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"

	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
	"github.com/ptcrun/ptc/internal/runtime/ts"
)

// executor runs one JavaScript or TypeScript job (the engine brings its
// guards) with the OS CPU clock and the heap watchdog. Worker processes and the in-process mode share it, so
// both give the same results and errors.
type executor struct {
	js *js.Engine
	ts *ts.Engine
	// threadSetup, when set, runs on the execution's thread once it is
	// locked, before the script runs (a worker's Landlock restriction).
	threadSetup func()
}

func newExecutor(programCache int) *executor {
	if programCache <= 0 {
		programCache = defaultProgramCache
	}
	e := &executor{js: js.New(js.WithProgramCache(programCache))}
	e.ts = ts.NewEngine(e.js, programCache)
	return e
}

// defaultProgramCache is the number of compiled programs an executor keeps.
const defaultProgramCache = 64

// warmRuntime is a JavaScript runtime made ahead of its job (js.Engine's
// Warm: the runtime and the guards every script gets), and the function
// that runs the job in it.
type warmRuntime struct {
	run func(context.Context, *ptcruntime.Job, js.Source) *ptcruntime.Outcome
}

// warm makes a runtime for the next execution; nil if it cannot (the
// execution then makes its own).
func (e *executor) warm() *warmRuntime {
	run, err := e.js.Warm()
	if err != nil {
		return nil
	}
	return &warmRuntime{run: run}
}

// run executes job. baseLive is the live heap that does not belong to the
// execution (the worker's idle heap, or the current heap in-process);
// shared means other executions may use the same heap; onBreach, if set,
// is told of a breach as soon as the watchdog detects it; spun, if set,
// returns the CPU time the thread spent waiting for tool answers (a spin
// before blocking, internal/ipc), which is not the script's; warm is the
// runtime made for it ahead (nil: one is made now). The calling goroutine
// is locked to its OS thread for the run so that the thread's CPU clock
// measures the script alone.
func (e *executor) run(ctx context.Context, job *ptcruntime.Job, baseLive int64, shared bool, onBreach func(*fault.Error, time.Duration, int64), spun func() time.Duration, warm *warmRuntime) *ptcruntime.Outcome {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if e.threadSetup != nil {
		e.threadSetup()
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newWatchdog(job.Limits.CPUTime, job.Limits.MemoryBytes, baseLive, shared, cancel)
	wd.onBreach = onBreach
	wd.leaveOut(spun)
	wd.start()

	inner := *job
	// CPU time is enforced from the OS clock by the watchdog, not from the
	// VM's running time.
	inner.Limits.CPUTime = 0
	if job.Idle != nil {
		// A pause reports the CPU time used so far, read from the same
		// clock: the VM's running time counts the time a loaded host does
		// not schedule the thread.
		inner.Idle = func(inflight int, _ time.Duration) { job.Idle(inflight, wd.used()) }
	}
	var out *ptcruntime.Outcome
	if job.Language == core.LanguageTypeScript {
		out = e.ts.Run(ctx, &inner)
	} else {
		if warm != nil {
			out = warm.run(ctx, &inner, js.Source{Code: job.Source})
		} else {
			out = e.js.Run(ctx, &inner)
		}
	}

	cpu, peak, fe := wd.stop()
	if fe == nil {
		var b *breach
		if errors.As(context.Cause(ctx), &b) {
			fe = b.fe
		}
	}
	if fe != nil {
		// A breach wins over whatever the interrupted script produced.
		out.Result, out.Err = nil, fe
	}
	out.CPUTime = cpu
	out.PeakMemoryBytes = peak
	return out
}
