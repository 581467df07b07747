// Package layering holds the tests that keep ptc's public surface small (at
// most 150 exported names, TestPublicSurface) and enforce its package
// layering over `go list -deps` (TestLayering): dependencies point one way,
//
//	cmd → ptc (root) → internal/executor → runtime → bridge → tools
//
// engines (runtime/...) and bridge/... never depend on gRPC, ptc.v1, the
// root package or internal/server; tools/... never depends on engines or
// the bridge; the worker protocol (internal/workerproto) never depends on
// gRPC or ptc.v1; the MCP front end (internal/mcpserve) never depends on
// the engines, gRPC, the executor or the server it is given as a backend.
// docs/ARCHITECTURE.md describes the layers.
package layering
