// Package python is ptc's Python engine: it runs a script in CPython 3.12
// compiled for WASI (the interpreter module is given by the caller, see
// internal/pyinterp), as a guest of the WebAssembly engine
// (internal/runtime/wasm), under the same limits: memory is the guest's
// linear memory, time and CPU are the guest's, logs and output are bounded
// and classified alike.
//
// The interpreter starts a prelude (prelude.py) that reads the job from
// its stdin, runs the script's body as the body of an async function, and
// speaks a line protocol with the host: calls, discovery, log lines and
// the result go out on fd 1, the job and the completions of calls come in
// on fd 0 (see session.go). The script's own print(), sys.stdout,
// sys.stderr and logging are log streams of the prelude: nothing the
// script prints reaches fd 1, so printed text that looks like a call is a
// log line, never a call.
//
// The interpreter module is compiled once per Engine (wazero's
// compilation cache in a directory makes a restarted process load it
// instead of compiling it again); every execution runs on an instance of
// its own, so no state survives from one execution to the next. With
// Config.Warm, a pool (pool.go) keeps that many instances started ahead
// of requests: each has booted and loaded the prelude and waits on its
// stdin for a job; an execution takes one whose memory fits its limit
// (else starts its own) and the pool starts a replacement. What an
// interpreter does before its job (its start) is not charged to the job;
// from the job on, its time, CPU, memory and logs are the job's. Its
// clocks and random source are the same fixed ones for every start and
// become the job's when the job begins (sources.go), so an execution
// behaves alike on an instance started for it or ahead of it.
//
// The package imports internal/runtime, internal/runtime/wasm,
// internal/bridge, tools and other internal packages, never gRPC.
package python
