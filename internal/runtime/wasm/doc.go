// Package wasm is the WebAssembly engine of ptc, built on wazero. It runs
// WASI preview1 command modules ("_start") as runtime.Engine jobs:
//
//   - stdin carries the job's input JSON ("null" when empty), stdout the
//     result JSON (one value, capped by MaxOutputBytes), stderr the logs
//     (one log entry per line, capped by the job's LogBuffer);
//   - tools are reached through the ptc_v1 host module (see package
//     internal/abi and docs/wasm-abi.md), every call going through the job's
//     bridge.Caller;
//   - there is no filesystem, no network, and by default a fixed virtual
//     clock (starting at 2022-01-01T00:00:00Z, advancing 1ms per reading,
//     sleeps return at once) and a deterministic random source (the same
//     bytes in every execution). Config.RealClock and RealRandom change
//     that.
//
// Compiled modules are cached by the SHA-256 of their bytes in a bounded LRU
// shared by all executions of an Engine: a module is compiled once (even
// when many executions ask for it at the same moment) and instantiated per
// execution. RunHash runs a cached module by hash and fails with
// ErrUnknownModule when the engine does not hold it.
//
// Modules are untrusted: before wazero decodes one, checkStructure reads
// every section and instruction and refuses a module over its Bounds
// (counts of types, functions, globals, locals, br_table targets, nesting
// depth, segments, …) with ErrInvalidModule; compiling has a timeout, a
// bound on concurrent compiles and stops when no caller waits for it
// (ErrCompileLimit); the cache is bounded in modules and in bytes.
//
// Limits: memory is bounded per execution by a wazero memory allocator that
// refuses to grow linear memory past the job's MemoryBytes (MEMORY_LIMIT);
// the wall timeout, CPU time and output limits close the module through its
// context (TIMEOUT, CPU_LIMIT, OUTPUT_LIMIT); a module that fails after the
// bridge refused a call for the call budget ends as TOOL_CALL_LIMIT.
//
// Design notes, with the numbers measured on a 2-core machine:
//
//   - One wazero runtime per Engine, with per-execution memory limits from
//     experimental.WithMemoryAllocator, rather than one runtime per distinct
//     limit: compiled code is per runtime, and a Go guest takes about 2 s to
//     compile cold (about 0.1 s from a Config.CacheDir cache), so splitting the
//     cache by limit would multiply compilations. The allocator also tells
//     a refused grow (a limit) from any other failure.
//   - WithCloseOnContextDone is required for timeouts to stop a guest that
//     never calls the host; it costs about 3x on the expense example (74 ms
//     without, 220 ms with) and more on tight loops.
//   - Linear memory lives outside the Go heap, in a mapping that reserves
//     the largest memory the engine allows and is made accessible as the
//     guest grows: a grow copies nothing, pages the guest never touches are
//     never resident, and a guest growing to a 2 GiB limit in 64 MiB steps
//     reaches MEMORY_LIMIT in about 2.5 ms (34 s with Go slices doubled and
//     copied, on a loaded 2-core host). Freed mappings are recycled (up to 8,
//     keeping at most 16 MiB resident each; the rest goes back to the
//     system at once), cleared as they are exposed: recycling took a cached
//     Go guest's run from about 10 ms to about 6 ms.
//   - A guest's CPU time is its thread's CPU clock (the execution's
//     goroutine is locked to its thread): time waiting for tools or for a
//     loaded host to schedule it is not CPU time.
//
// The package imports runtime, bridge, tools and internal/abi, never gRPC.
package wasm
