// Package runtime is the home of ptc's engines in the layout; it has no API
// of its own. An engine runs one job — a script, its input, its limits, its
// determinism and the tools it may call — and the job is built from ptc's
// internal request model, so the engines live where the compiler keeps them
// private:
//
//   - internal/runtime: the Engine interface, the Job an engine sees, the
//     log buffer and the Outcome;
//   - internal/runtime/js: JavaScript on goja;
//   - internal/runtime/ts: TypeScript, transpiled by esbuild and run on
//     the JavaScript engine;
//   - internal/runtime/wasm: WebAssembly (WASI preview 1) on wazero, which
//     also hosts the Python interpreter (internal/python);
//   - internal/runtime/worker: worker processes that isolate the engines,
//     and the one owner of a worker's lifecycle.
//
// Programs reach the engines through the root package: ptc.NewRunner runs
// scripts, ptc.WithIsolation chooses worker processes and ptc.RunWorker
// hosts them. docs/ARCHITECTURE.md describes the layers.
package runtime
