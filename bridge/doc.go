// Package bridge is the home of ptc's tool dispatch in the layout; it has no
// API of its own. The dispatcher that mediates every tool call of an
// execution (names, argument and output schemas, budgets, the audit trace,
// discovery) records calls in ptc's internal request model, so it lives
// where the compiler keeps it private, in internal/bridge.
//
// The public part of the bridge is the guest side: bridge/guest is the Go
// SDK for WebAssembly programs (GOOS=wasip1) that call tools through the
// ptc_v1 host ABI (docs/wasm-abi.md). Programs define tools with package
// tools and run scripts with the root package ptc. docs/ARCHITECTURE.md
// describes the layers.
package bridge
