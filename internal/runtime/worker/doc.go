// Package worker isolates JavaScript, TypeScript and WebAssembly executions in a pool of
// worker processes with honest limits: a Pool is a runtime.Engine that runs
// each execution in a pre-started process (the same binary, re-executed in
// worker mode) with a hard OS memory limit (RLIMIT_DATA), a heap watchdog
// that reports MEMORY_LIMIT before the OS refuses memory, CPU time read
// from the OS thread clock (CPU_LIMIT; tool waits do not count), and the
// JavaScript engine's size guards (internal/runtime/js, the same in-process), which
// turn oversized single allocations into catchable RangeErrors.
// WebAssembly guests run there without loop checks and are stopped by
// their worker's death (wasm.go). A worker that breaks a limit, is killed
// at a deadline or dies takes only the executions it was running with it;
// the pool replaces it.
//
// A binary that hosts a Pool must let its workers start, first thing in
// main (ptc.RunWorker does exactly this):
//
//	func main() {
//		if code, ok := worker.Main(); ok {
//			os.Exit(code)
//		}
//		…
//	}
//
// The supervisor keeps the execution's bridge.Caller and log buffer: the
// worker sends a frame for each tool call (in the order the script makes
// them, so the trace is numbered as in-process), each console line and each
// tools.$search or tools.$describe, and the supervisor answers. The Execute
// frame carries everything a script can see as explicit fields — the
// language, the tool manifest with inline flags, the limits (by the limits table) and
// determinism — so no capability depends on the mode. Frames are protobuf
// messages (internal/workerproto, package ptc.worker.v1) in internal/ipc
// frames over a pair of pipes; a worker is untrusted input to the
// supervisor, and every frame is bounded and checked.
//
// ModeInProcess runs the same executor (CPU clock, watchdog) in
// the calling process, for embedding and trusted tests; its memory limit
// is best effort. docs/workers.md describes the design, the limits and
// their slack, and the hardening.
//
// Files by job: config.go (Config, Mode), pool.go (the Pool), scheduling.go
// (which worker runs what; starting, retiring, replacing), supervise.go
// (one execution on a worker; deaths classified), receive.go (the
// supervisor's side of a worker's frames), lifecycle.go (a worker's
// states, and starting — the binary re-executed in its own process group
// — and killing its process), process.go (spawning, the handshake and
// talking to a worker process), child.go (the worker's main and its
// executions), lane.go (a worker's execution slots and the warmer that
// makes their runtimes ahead), harden.go (what a worker puts in force),
// proxy.go (the call proxy: a script's bridge.Caller inside a worker),
// exec.go and meter.go (the executor and its watchdog), wasm.go
// (WebAssembly in workers), compile.go (a request's module compiled in a
// worker to check it, never in the supervisor), convert.go and transport.go (frames),
// settle.go (between executions), lockdown*.go (the filesystem lockdown),
// lineage.go (a worker dies with its supervisor and starts no workers),
// exitlog.go (a worker's death in the log), facts.go (what `ptcd check`
// reports).
//
// Package worker imports internal/runtime, its js and ts engines,
// internal/bridge, tools and other internal packages; never gRPC, ptc.v1
// or the root package ptc.
package worker
