// Package layering holds the tests that keep ptc's public surface small
// and honest — at most maxExportedNames exported names
// (TestPublicSurface), none of which needs a type from an internal package
// to use (TestNoInternalTypesInPublicAPI) — and enforce its package
// layering over `go list -deps` (TestLayering): dependencies point one way,
//
//	cmd → ptc (root) → internal/executor → internal/runtime → internal/bridge → tools
//
// engines (internal/runtime/...) and the bridge never depend on gRPC,
// ptc.v1, the root package or internal/server; tools/... never depends on
// engines or the bridge; runtime/ and bridge/ are documentation-only homes
// of the engines and the bridge in the layout; the worker protocol
// (internal/workerproto) never depends on gRPC or ptc.v1; the MCP front end
// (internal/mcpserve) never depends on the engines, gRPC, the executor or
// the server it is given as a backend. docs/ARCHITECTURE.md describes the
// layers.
package layering
