// Package bridge is the boundary between a sandbox and the tools. A
// Dispatcher mediates every tool call of one execution: it checks the name
// against the tools the execution may use, validates the arguments against
// the input schema, enforces the call budget and the concurrency bound, runs
// the handler, validates the output, accounts bytes and records the audit
// trace.
//
// Engines talk to the bridge only through the Caller interface; the bridge
// imports tools, never an engine or gRPC.
//
// The bridge is internal: its Dispatcher records calls in the request
// model (internal/core) and classifies failures with internal/fault, so
// only ptc's own packages use it. The importable package
// github.com/ptcrun/ptc/bridge is the layout's home and documentation for
// it; the WebAssembly guest SDK, bridge/guest, is public.
package bridge
