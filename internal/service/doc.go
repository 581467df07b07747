// Package service is ptc's one assembly: it turns a validated
// configuration (internal/config, which is data only) into running
// objects, starts them in order and stops them in reverse.
//
//   - Runtime: the tool registry (demo tools and tool sources), the
//     continuation manager and its store, the executor with its engines
//     and worker pool, and the request server over them. `ptc mcp
//     --config` serves one over stdio.
//   - Service: ptcd. New binds every listener first (a port in use fails
//     before any worker starts), then sets up tracing, admission,
//     metrics, a Runtime and the gRPC, metrics and MCP servers; Start
//     serves; Wait drains (shutdown_grace), stops the servers, then
//     closes the Runtime, tracing and the listeners.
//
// cmd/ptcd, cmd/ptc and the tests use this package; nothing else builds
// running objects from the configuration (internal/layering checks it).
// It must not be imported by the root package, the engines, the bridge
// or the tools.
package service
