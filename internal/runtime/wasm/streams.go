package wasm

import (
	"context"
	"io"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/ptcrun/ptc/internal/runtime"
)

// streams lets a host program drive a WASI command through its standard
// streams instead of the engine's convention (input on stdin, the result
// on stdout): see RunStreams.
type streams struct {
	args      []string
	open      OpenStreams
	configure func(wazero.ModuleConfig) wazero.ModuleConfig
}

// OpenStreams gives a stream guest its stdin and stdout (RunStreams,
// StartStreams): called once, on the goroutine the guest runs on, just
// before the module starts, with the execution's context and the meter
// of the guest.
type OpenStreams func(ctx context.Context, m Meter) (stdin io.Reader, stdout io.Writer)

// Meter is what the host side of a stream guest reads of it while it
// runs. Both functions are safe to call from any goroutine.
type Meter struct {
	// CPU returns the guest's compute time since its job began: its
	// thread's CPU clock.
	CPU func() time.Duration
	// Peak returns the most linear memory the guest has held, in bytes.
	Peak func() int64
	// Exclude runs f, on the guest's goroutine, without charging its CPU
	// time to the guest: work the host does there for itself while the
	// guest waits (an inline tool call). Neither CPU nor the CPU limit
	// count it.
	Exclude func(f func())
}

// RunStreams runs the cached module with the given hex SHA-256 with
// standard streams its caller provides: an interpreter module whose
// prelude speaks a protocol with its host (internal/python). Memory, time,
// CPU and the logs on stderr are bounded and classified as for any
// module; the Outcome's Result is left empty, what the module wrote to
// stdout having gone to the caller's writer.
//
// args are the module's arguments (the program name first). open is
// called once, on the goroutine the guest runs on, just before the module
// starts: ctx ends when the execution does for any reason (its deadline,
// CPU limit or the caller), so that a stdin that blocks can stop waiting,
// and the Meter reports the guest's compute time and memory so far; it
// returns the module's stdin and stdout. configure, when not nil, adjusts
// the module's configuration last (its clocks and random source, for
// one).
//
// It returns ErrUnknownModule, and no Outcome, when the engine does not
// hold the module.
func (e *Engine) RunStreams(ctx context.Context, hash string, job *runtime.Job, args []string,
	open OpenStreams, configure func(wazero.ModuleConfig) wazero.ModuleConfig) (out *runtime.Outcome, err error) {
	return e.runHash(ctx, hash, job, &streams{args: args, open: open, configure: configure}, "compile the module first")
}
