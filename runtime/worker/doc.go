// Package worker isolates JavaScript executions in a pool of worker
// processes with honest limits: a Pool is a runtime.Engine that runs each
// execution in a pre-started process (the same binary, re-executed in
// worker mode) with a hard OS memory limit (RLIMIT_DATA), a heap watchdog
// that reports MEMORY_LIMIT before the OS refuses memory, CPU time read
// from the OS thread clock (CPU_LIMIT; tool waits do not count), and size
// guards that turn oversized single allocations into catchable
// RangeErrors. A worker that breaks a limit, is killed at a deadline or
// dies takes only the executions it was running with it; the pool replaces
// it.
//
// A binary that hosts a Pool must let its workers start, first thing in
// main:
//
//	func main() {
//		if worker.IsWorker() {
//			os.Exit(worker.Main())
//		}
//		…
//	}
//
// The supervisor keeps the execution's bridge.Caller and log buffer: the
// worker sends a frame for each tool call (in the order the script makes
// them, so the trace is numbered as in-process) and each console line, and
// the supervisor runs the calls and answers. Frames are length-delimited
// protobuf messages (package ptc.worker.v1) over a Unix socket; a worker
// is untrusted input to the supervisor, and every frame is bounded and
// checked.
//
// ModeInProcess runs the same executor (guards, CPU clock, watchdog) in
// the calling process, for embedding and trusted tests; its memory limit
// is best effort. docs/workers.md describes the design, the limits and
// their slack, and the hardening.
//
// Package worker imports runtime, runtime/js, bridge, internal packages
// and its own frame protocol; never gRPC services or the root package ptc.
package worker
