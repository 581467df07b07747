package python

import (
	"context"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
)

// This file is what a worker process needs of the engine (see
// internal/runtime/worker/python.go): the module as it is compiled, and a
// hook on the guest's CPU clock.

// StripDebug returns the interpreter module as New compiles it: without
// its DWARF custom sections (about half of the pinned module). A
// supervisor hands this form to its worker processes, so the bytes it
// sends and hashes are those the workers compile.
func StripDebug(module []byte) ([]byte, error) { return stripDebug(module) }

// cpuWatchKey keys the watch WithCPUWatch adds to a context.
type cpuWatchKey struct{}

// WithCPUWatch returns ctx carrying watch: Run, given that context, calls
// watch once the job begins, on the guest's goroutine, with the guest's
// meter: its CPU clock (the CPU time its thread used since the job began)
// and its peak memory, for the breach's report. An interpreter compiled
// with NoLoopChecks cannot be stopped by a cancelled context while it
// computes, so the process that runs it watches the CPU limit itself
// through this clock and has the interpreter's process killed when it is
// spent. watch must return at once.
func WithCPUWatch(ctx context.Context, watch func(wasm.Meter)) context.Context {
	return context.WithValue(ctx, cpuWatchKey{}, watch)
}

// cpuWatchOf returns the watch WithCPUWatch put in ctx, nil if none.
func cpuWatchOf(ctx context.Context) func(wasm.Meter) {
	w, _ := ctx.Value(cpuWatchKey{}).(func(wasm.Meter))
	return w
}

// stopWatchKey keys the watch WithStopWatch adds to a context.
type stopWatchKey struct{}

// WithStopWatch returns ctx carrying watch: Run, given that context, calls
// watch with the breach when it stops the guest for one (a protocol line
// it must not write, a result over the output limit). An interpreter
// compiled with NoLoopChecks that computes on after that is not stopped
// by its cancelled context: the process that runs it has its process
// killed when the guest has not ended soon after. watch must return at
// once.
func WithStopWatch(ctx context.Context, watch func(*fault.Error)) context.Context {
	return context.WithValue(ctx, stopWatchKey{}, watch)
}

// stopHook returns stop, followed by the call of the stop watch in ctx
// (if any) with the session's breach.
func stopHook(ctx context.Context, s *session, stop func(error)) func(error) {
	watch, _ := ctx.Value(stopWatchKey{}).(func(*fault.Error))
	if watch == nil {
		return stop
	}
	return func(err error) {
		stop(err)
		if s.breach != nil {
			watch(s.breach)
		}
	}
}
